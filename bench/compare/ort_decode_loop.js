// ort_decode_loop.js: the generation loop of bench/dynamic_shapes_bench.cc on
// ONNX Runtime, for a side-by-side figure.
//
//   ./build/bench/dynamic_shapes_bench --write-onnx /tmp/decoder.onnx
//   node bench/compare/ort_decode_loop.js /tmp/decoder.onnx [--steps N] [--repeat R] [--threads T]
//
// Same loop as the bench: one token per step from an empty key-value cache,
// greedy (argmax) decoding from token 1, the previous step's present keys and
// values fed back as the past ones. Session options as ort_runner.js (2
// threads, sequential, graphOptimizationLevel 'all'). Prints ms per step, the
// median of R loops (default 3), and the first generated tokens, which should
// equal the bench's.
'use strict';
const ort = require('onnxruntime-node');

async function main() {
  const args = process.argv.slice(2);
  if (args.length < 1) throw new Error('usage: node ort_decode_loop.js MODEL [--steps N] [--repeat R] [--threads T]');
  const model = args[0];
  const options = {steps: 128, repeat: 3, threads: 2};
  for (let i = 1; i + 1 < args.length; i += 2) {
    const key = args[i].replace(/^--/, '');
    if (!(key in options)) throw new Error(`unknown flag '${args[i]}'`);
    options[key] = parseInt(args[i + 1], 10);
  }
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: options.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    executionProviders: ['cpu'],
  });
  const pastNames = session.inputNames.filter((name) => name.startsWith('past_'));
  const presentNames = session.outputNames.filter((name) => name.startsWith('present_'));
  const heads = 4, headDim = 64;
  const loops = [];
  let tokens = [];
  for (let r = 0; r < options.repeat; ++r) {
    let past = pastNames.map(() => new ort.Tensor('float32', new Float32Array(0), [1, heads, 0, headDim]));
    let token = 1n;
    tokens = [];
    const begin = process.hrtime.bigint();
    for (let step = 0; step < options.steps; ++step) {
      const feeds = {ids: new ort.Tensor('int64', BigInt64Array.from([token]), [1, 1])};
      pastNames.forEach((name, k) => {
        feeds[name] = past[k];
      });
      const out = await session.run(feeds);
      const logits = out.logits.data;
      let best = 0;
      for (let i = 1; i < logits.length; ++i)
        if (logits[i] > logits[best]) best = i;
      token = BigInt(best);
      tokens.push(best);
      past = presentNames.map((name) => out[name]);
    }
    loops.push(Number(process.hrtime.bigint() - begin) / 1e6 / options.steps);
  }
  loops.sort((a, b) => a - b);
  console.log(
      `onnxruntime ${ort.env.versions.common}: ${loops[Math.floor(loops.length / 2)].toFixed(3)} ms/step ` +
      `(median of ${options.repeat} loops of ${options.steps} steps, ${options.threads} threads); ` +
      `first tokens ${tokens.slice(0, 12).join(',')}`);
}

main().catch((error) => {
  console.error(String(error && error.message ? error.message : error));
  process.exit(1);
});
