"""The K-peak statistic: the ARI margin and the band of K_test around the true K."""
import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from papers.dro_varclust import experiments as E


def test_peak_margin_known_answer():
    # band {4, 5, 6}: the margin is score(5) - max(score(2), score(3), score(7), score(8)) = 0.5 - 0.4
    scores = {2: 0.1, 3: 0.4, 4: 0.9, 5: 0.5, 6: 0.2, 7: 0.3, 8: 0.0}
    assert E.peak_margin(scores, 5, [4, 5, 6]) == pytest.approx(0.1)
    with pytest.raises(ValueError):
        E.peak_margin({5: 1.0}, 5, [5])


def test_peak_band():
    assert E._peak_band({"peak_band": [0.75, 1.25]}, 5, [2, 3, 4, 5, 6, 7, 8]) == [4, 5, 6]
    assert E._peak_band({"peak_band": [0.9, 1.1]}, 25, [10, 15, 20, 23, 25, 27, 30, 35, 40]) == [23, 25, 27]
    with pytest.raises(ValueError):
        E._peak_band({"peak_band": [0.75, 1.25]}, 5, [4, 5, 6])  # nothing off the band
    with pytest.raises(ValueError):
        E._peak_band({"peak_band": [1.1, 1.5]}, 5, [2, 5, 8])  # the band must hold K


def test_ari_is_chance_corrected_unlike_best_matching_accuracy():
    # a labelling independent of y: ARI stays near 0 for every K_test, while best-matching accuracy is largest
    # when K_test equals the number of true clusters (why k-peak moved from accuracy to ARI)
    from papers.dro_varclust.cluster import clustering_scores

    rng = np.random.default_rng(1)
    y = np.repeat(np.arange(5), 200)
    acc, ari = {}, {}
    for k in (2, 5, 8):
        labels = rng.integers(0, k, size=y.size)
        acc[k], ari[k] = clustering_scores(y, labels)["accuracy"], adjusted_rand_score(y, labels)
    assert max(abs(v) for v in ari.values()) < 0.01
    assert acc[5] > acc[2] and acc[5] > acc[8]


def test_band_margin_known_answer():
    scores = {2: 0.1, 3: 0.4, 4: 0.9, 5: 0.5, 6: 0.2, 7: 0.3, 8: 0.0}
    assert E.band_margin(scores, [4, 5, 6]) == pytest.approx(0.5)  # 0.9 (K = 4) - 0.4 (K = 3)
    with pytest.raises(ValueError):
        E.band_margin({5: 1.0}, [5])
