// ort_runner.js: the ONNX Runtime side of bench/compare (compare.py drives it).
//
//   node ort_runner.js MODEL.onnx INPUTS.json OUTPUT_DIR [--threads N] [--spin 0|1]
//
// Same protocol as graft_runner.cc: times session creation + the first run,
// writes the outputs as raw little-endian files, prints one JSON line
// {"ready": true, ...}, then serves "run N" lines with {"times_ms": [...]}.
// Session options: intraOpNumThreads N (default 2), interOpNumThreads 1,
// sequential execution, graphOptimizationLevel 'all' (ORT's full set of
// graph rewrites, as a production deployment would use); --spin 0 turns off
// the intra-op pool's spin-waiting (session.intra_op.allow_spinning).
'use strict';
const fs = require('fs');
const path = require('path');
const readline = require('readline');

const TYPED = {
  float32: Float32Array, float64: Float64Array, int64: BigInt64Array, int32: Int32Array,
  int8: Int8Array, uint8: Uint8Array, bool: Uint8Array, float16: Uint16Array,
};

// Peak resident set of this process in KiB (VmHWM; ru_maxrss would include
// the parent's peak inherited across fork + exec).
function peakRssKb() {
  const match = /VmHWM:\s*(\d+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
  return match ? Number(match[1]) : -1;
}

function send(object) { process.stdout.write(JSON.stringify(object) + '\n'); }

function readInput(entry, manifestPath) {
  const Typed = TYPED[entry.dtype];
  if (!Typed) throw new Error(`input '${entry.name}': dtype ${entry.dtype} is not handled`);
  // A relative file lies beside the manifest.
  const file = path.isAbsolute(entry.file) ? entry.file : path.join(path.dirname(manifestPath), path.basename(entry.file));
  const bytes = fs.readFileSync(file);
  const copy = new Uint8Array(bytes.length);
  copy.set(bytes);
  const data = new Typed(copy.buffer, 0, bytes.length / Typed.BYTES_PER_ELEMENT);
  return new ort.Tensor(entry.dtype, data, entry.shape);
}

let ort;
async function main() {
  const args = process.argv.slice(2);
  if (args.length < 3) throw new Error('usage: node ort_runner.js MODEL INPUTS.json OUTPUT_DIR [--threads N]');
  const [model, manifestPath, outputDir] = args;
  let threads = 2;
  let spin = '1';
  for (let i = 3; i + 1 < args.length; i += 2) {
    if (args[i] === '--threads') threads = parseInt(args[i + 1], 10);
    else if (args[i] === '--spin') spin = args[i + 1];
    else throw new Error(`unknown flag '${args[i]}'`);
  }
  ort = require('onnxruntime-node');
  const feeds = {};
  for (const entry of JSON.parse(fs.readFileSync(manifestPath, 'utf8'))) feeds[entry.name] = readInput(entry, manifestPath);
  const startupRss = peakRssKb();

  const start = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    executionProviders: ['cpu'],
    extra: { session: { intra_op: { allow_spinning: spin } } },
  });
  const loaded = process.hrtime.bigint();
  const results = await session.run(feeds);
  const done = process.hrtime.bigint();
  const ms = (a, b) => Number(b - a) / 1e6;

  const outputs = session.outputNames.map((name, i) => {
    const t = results[name];
    const file = path.join(outputDir, `${i}.bin`);
    fs.writeFileSync(file, Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    return { name, dtype: t.type, shape: t.dims.map(Number), file };
  });
  send({ ready: true, load_ms: ms(start, loaded), first_run_ms: ms(loaded, done),
         first_inference_ms: ms(start, done), startup_rss_kb: startupRss, threads, outputs,
         version: ort.env.versions.common });

  const lines = readline.createInterface({ input: process.stdin });
  for await (const line of lines) {
    if (line === 'quit') break;
    if (!line.startsWith('run ')) throw new Error(`unknown request '${line}'`);
    const count = parseInt(line.slice(4), 10);
    const times = [];
    for (let r = 0; r < count; ++r) {
      const begin = process.hrtime.bigint();
      await session.run(feeds);
      times.push(ms(begin, process.hrtime.bigint()));
    }
    send({ times_ms: times });
  }
  await session.release();
}

main().then(() => process.exit(0), (error) => {
  send({ error: String(error && error.message ? error.message : error) });
  process.exit(1);
});
