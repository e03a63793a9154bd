"""run() releases the GIL; one session run from 8 threads at once."""
import threading
import time

import numpy as np

import graft


def test_eight_threads_match_sequential_runs(models):
    sess = graft.InferenceSession(models["mlp"], threads=1)
    rng = np.random.default_rng(1)
    # Different batch sizes too: plans for several shapes made concurrently.
    inputs = [rng.standard_normal((1 + k % 3, 256)).astype(np.float32) for k in range(32)]
    expected = [sess.run(None, {"x": x})[0] for x in inputs]
    results = {}
    errors = []
    start = threading.Barrier(8)

    def work(t):
        try:
            start.wait()
            for repeat in range(3):
                for k in range(t, len(inputs), 8):
                    results[(t, k, repeat)] = sess.run(None, {"x": inputs[k]})[0]
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    assert len(results) == 3 * len(inputs)
    for (t, k, repeat), y in results.items():
        np.testing.assert_array_equal(y, expected[k])


def test_other_python_threads_run_during_a_run(models):
    sess = graft.InferenceSession(models["slow"], threads=1)
    x = np.eye(1024, dtype=np.float32)
    sess.run(None, {"x": x})  # plans and compiles
    done = threading.Event()
    result = []

    def run():
        result.append(sess.run(None, {"x": x})[0])
        done.set()

    th = threading.Thread(target=run)
    started = time.perf_counter()
    th.start()
    ticks = 0
    while not done.is_set():  # this loop needs the GIL
        ticks += 1
        time.sleep(0.001)
    elapsed = time.perf_counter() - started
    th.join()
    np.testing.assert_array_equal(result[0], x)
    # Were the GIL held during the run, this thread would get no turn until it ended.
    assert ticks >= 5 or elapsed < 0.02, (ticks, elapsed)


def test_profiled_runs_from_threads_are_all_counted(models):
    sess = graft.InferenceSession(models["mlp"], threads=1, profile=True)
    x = np.ones((2, 256), np.float32)
    threads = [threading.Thread(target=lambda: [sess.run(None, {"x": x}) for _ in range(5)]) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    p = sess.profile()
    assert p["runs"] == 40
    assert p["nodes_per_run"] > 0 and p["by_node"]
    assert sum(row["model_nodes"] for row in p["by_node"]) >= 3  # MatMul, Tanh, MatMul, in whatever subgraphs
