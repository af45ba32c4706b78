"""The comparison of recorded pool runs (``benchmarks.bench_pool_hierarchies --from-json``)."""

import json

import numpy as np


def test_compare_files_scores_each_file_and_model(tmp_path):
    from benchmarks.bench_pool_hierarchies import compare_files

    runs = [dict(model="gamma_poisson20", seed=s, log_z=-52.74 + e, se=se, z=e / se)
            for s, (e, se) in enumerate([(0.001, 0.001), (-0.003, 0.001), (0.0, 0.002)])]
    runs.append(dict(model="gamma_poisson20", seed=3, log_z=np.nan, se=np.nan, z=np.nan))  # a failed run: left out
    runs.append(dict(model="hierarchical_normal_100", seed=0, log_z=-204.8, se=0.01, z=0.5))
    runs[0].update(z_cross_fitted=2.0, se_cross_fitted=0.002)  # recorded for two runs only, one of them failed
    runs[3].update(z_cross_fitted=np.nan, se_cross_fitted=np.nan)
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(runs))
    md = compare_files([path], "cmd")
    rows = [line for line in md.splitlines() if line.startswith("| `runs.json`")]
    assert rows == [
        "| `runs.json` | gamma_poisson20 | own | 3 | 2/3 | -0.67 | 0.00133 | 0.00208 | 0.00183 | 0.001 | 0.003 |",
        "| `runs.json` | gamma_poisson20 | cross_fitted | 1 | 0/1 | +2.00 | 0.002 | nan | 0.004 | 0.004 | 0.004 |",
        "| `runs.json` | hierarchical_normal_100 | own | 1 | 1/1 | +0.50 | 0.01 | nan | 0.005 | 0.005 | 0.005 |",
    ]
