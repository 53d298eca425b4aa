"""Interference predictors: baselines, matrix completion, regression, and the kappa matrix."""

from __future__ import annotations

from importlib.util import find_spec

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched.errors import InvalidInstanceError, MissingExtraError
from optsched.interference import (
    CoLocationRegressor,
    InterferenceTruth,
    MatrixCompletion,
    MeanBaseline,
    PredictorScore,
    PredictorScores,
    colocation_features,
    compare_predictors,
    generate_interference_truth,
    interference_matrix,
    prediction_errors,
)

#: The learned predictors fit scikit-learn models (the ``ml`` extra; the test extra has it).
needs_sklearn = pytest.mark.skipif(
    find_spec("sklearn") is None, reason="scikit-learn (the ml extra) is not installed"
)

#: Held-out RMSE below which a noise-free low-rank matrix counts as recovered.
RECOVERY_RMSE = 1e-3
#: Floating-point slack for exact identities.
ATOL = 1e-12

#: The documented evaluation setting (docs/guide/interference.rst, the example and benchmark).
DOC_TYPES, DOC_COLD, DOC_FRACTION, DOC_NOISE, DOC_SEED = 30, 6, 0.3, 0.05, 0

nan = np.nan


def test_mean_baselines_by_hand():
    y = np.array([[1.0, nan, 3.0], [nan, 2.0, nan], [5.0, nan, nan]])
    # mu = 11/4; rows 2, 2, 5; columns 3, 2, 3.
    assert np.allclose(MeanBaseline("global").fit(y).predict_matrix(), 2.75)
    assert np.allclose(MeanBaseline("row").fit(y).predict_matrix()[:, 0], [2, 2, 5])
    assert np.allclose(MeanBaseline("column").fit(y).predict_matrix()[0], [3, 2, 3])
    add = MeanBaseline("additive").fit(y).predict_matrix()
    assert add[2, 1] == pytest.approx(5 + 2 - 2.75)
    assert add[1, 1] == pytest.approx(2 + 2 - 2.75)


def test_baseline_falls_back_to_global_mean_for_empty_rows():
    y = np.array([[1.0, 3.0], [nan, nan]])
    assert np.allclose(MeanBaseline("row").fit(y).predict_matrix()[1], 2.0)


def test_prediction_errors_by_hand():
    e = prediction_errors(np.array([[1.0, 2.0]]), np.array([[0.0, 4.0]]))
    assert e == {"rmse": pytest.approx(np.sqrt(2.5)), "mae": 1.5, "max": 2.0, "n": 2}
    e = prediction_errors(np.array([[1.0, 2.0]]), np.array([[0.0, 4.0]]), np.array([[True, False]]))
    assert e["rmse"] == pytest.approx(1.0) and e["n"] == 1


@needs_sklearn
def test_completion_recovers_a_low_rank_matrix():
    rng = np.random.default_rng(0)
    s = rng.uniform(0, 1, (15, 2)) @ rng.uniform(0, 1, (2, 15))
    mask = rng.random(s.shape) < 0.6
    model = MatrixCompletion(2, alpha=0.0, tol=1e-6, max_iter=5000).fit(np.where(mask, s, nan))
    assert model.converged_ and model.rank_ == 2
    assert prediction_errors(model.predict_matrix(), s, ~mask)["rmse"] < RECOVERY_RMSE
    # Observed entries are fitted too.
    assert prediction_errors(model.predict_matrix(), s, mask)["rmse"] < RECOVERY_RMSE


@needs_sklearn
def test_completion_selects_the_rank_by_cross_validation():
    rng = np.random.default_rng(1)
    s = rng.uniform(0, 1, (16, 2)) @ rng.uniform(0, 1, (2, 16))
    mask = rng.random(s.shape) < 0.6
    model = MatrixCompletion("auto", alpha=0.0, candidate_ranks=(1, 2, 3)).fit(
        np.where(mask, s, nan)
    )
    assert set(model.cv_rmse_) == {1, 2, 3}
    assert model.rank_ == min(model.cv_rmse_, key=lambda r: (model.cv_rmse_[r], r))
    assert model.rank_ == 2  # the true rank: rank 1 underfits, rank 3 overfits the folds
    assert np.all(model.predict_matrix() >= 0)


@needs_sklearn
def test_completion_says_when_it_stops_short():
    truth = generate_interference_truth(12, seed=0)
    from sklearn.exceptions import ConvergenceWarning

    with pytest.warns(ConvergenceWarning, match="1 rounds"):
        model = MatrixCompletion(3, max_iter=1).fit(truth.observe_pairs(0.3, seed=0))
    assert not model.converged_ and model.n_iter_ == 1


@needs_sklearn
@settings(max_examples=2)
@given(seed=st.integers(0, 10_000))
def test_completion_is_deterministic(seed):
    obs = generate_interference_truth(10, seed=seed).observe_pairs(0.4, seed=seed)
    a = MatrixCompletion(2, seed=seed).fit(obs).predict_matrix()
    b = MatrixCompletion(2, seed=seed).fit(obs).predict_matrix()
    assert np.array_equal(a, b)


@needs_sklearn
def test_learned_predictors_beat_the_mean_baselines_on_held_out_entries():
    """The documented setting: 30 types (6 never measured), 30% of pairs observed with 5% noise."""
    truth = generate_interference_truth(DOC_TYPES, seed=DOC_SEED)
    scores = {
        s.name.split("(")[0]: s
        for s in compare_predictors(
            truth, fraction=DOC_FRACTION, noise=DOC_NOISE, cold_types=DOC_COLD, seed=DOC_SEED
        )
    }
    baselines = [scores[f"mean-{k}"].rmse for k in ("global", "row", "column", "additive")]
    assert scores["completion-nmf"].rmse < min(baselines)
    assert scores["regression-gbr"].rmse < min(baselines)
    # Only the regressor predicts unseen types; it beats the global mean there too.
    cold_global = scores["mean-global"].cold_rmse
    cold_reg = scores["regression-gbr"].cold_rmse
    assert cold_global is not None and cold_reg is not None and cold_reg < cold_global
    assert scores["completion-nmf"].cold_rmse is None


@needs_sklearn
@pytest.mark.parametrize("seed", [1, 2])
def test_completion_beats_the_global_mean_on_other_seeds(seed):
    truth = generate_interference_truth(24, seed=seed)
    obs = truth.observe_pairs(0.3, 0.05, seed=seed)
    held = np.isnan(obs)
    s = truth.pairwise_slowdowns()
    learned = prediction_errors(MatrixCompletion(3, seed=seed).fit(obs).predict_matrix(), s, held)
    mean = prediction_errors(MeanBaseline("global").fit(obs).predict_matrix(), s, held)
    assert learned["rmse"] < mean["rmse"]


def test_colocation_features_by_hand():
    f = np.array([[0.1, 0.2, 0.3, 0.4], [1.0, 0.0, 0.5, 0.0]])
    x = colocation_features(f, [0], [(1, 1)])
    load = np.array([2.0, 0.0, 1.0, 0.0])
    assert np.allclose(x[0], np.concatenate([f[0], load, f[0] * load, [2.0]]))


@needs_sklearn
@pytest.mark.parametrize("model", ["gbr", "mlp"])
def test_regressor_generalises_to_unseen_types(model):
    truth = generate_interference_truth(30, seed=4)
    profiles = truth.measured_profiles(0.0)
    samples = truth.sample_colocations(500, types=range(24), noise=0.0, seed=0)
    reg = CoLocationRegressor(model, seed=0).fit(profiles, samples)
    pred = reg.predict_matrix(profiles)
    assert pred.shape == (30, 30) and np.all(pred >= 0)
    s = truth.pairwise_slowdowns()
    cold = np.zeros_like(s, dtype=bool)
    cold[24:, 24:] = True
    mean = np.full_like(s, samples.slowdowns.mean())
    assert prediction_errors(pred, s, cold)["rmse"] < prediction_errors(mean, s, cold)["rmse"]
    # Group predictions are one per job.
    groups = reg.predict(profiles, [0, 1], [(2, 3), (4,)])
    assert groups.shape == (2,) and np.all(groups >= 0)


def test_interference_matrix_by_hand():
    s = np.array([[0.1, 0.2], [0.3, 0.4]])
    kappa = interference_matrix(s, [0, 1, 0])
    assert np.allclose(kappa, [[0, 0.2, 0.1], [0.3, 0, 0.3], [0.1, 0.2, 0]], atol=ATOL)
    timed = interference_matrix(s, [0, 1, 0], standalone_times=[2.0, 1.0, 0.5])
    assert np.allclose(timed, kappa * np.array([2.0, 1.0, 0.5])[:, None], atol=ATOL)
    clipped = interference_matrix(np.array([[0.0, -0.1], [0.2, 0.0]]), [0, 1])
    assert np.array_equal(clipped, [[0.0, 0.0], [0.2, 0.0]])


@given(
    types=st.lists(st.integers(0, 4), min_size=1, max_size=8),
    seed=st.integers(0, 1000),
)
def test_interference_matrix_is_the_truth_for_jobs(types, seed):
    truth = generate_interference_truth(5, seed=seed)
    s = truth.pairwise_slowdowns()
    kappa = interference_matrix(s, types)
    assert np.all(kappa >= 0) and np.all(np.diag(kappa) == 0)
    for j, a in enumerate(types):
        for k, b in enumerate(types):
            if j != k:
                assert kappa[j, k] == pytest.approx(truth.slowdown(a, [b]))


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ((np.ones((2, 3)), [0]), "type_slowdowns"),
        ((np.array([[nan, 1.0], [1.0, 1.0]]), [0]), "type_slowdowns"),
        ((np.ones((2, 2)), [0, 2]), "job_types[1]"),
        ((np.ones((2, 2)), [0, 1], [1.0]), "standalone_times"),
        ((np.ones((2, 2)), [0, 1], [1.0, -1.0]), "standalone_times[1]"),
    ],
)
def test_interference_matrix_rejects_bad_input(args, field):
    with pytest.raises(InvalidInstanceError) as err:
        interference_matrix(*args)
    assert err.value.field == field


@needs_sklearn
@pytest.mark.parametrize(
    ("observed", "message"),
    [
        (np.ones((2, 3)), "square"),
        (np.full((2, 2), nan), "no observed"),
        (np.array([[1.0, -1.0], [nan, 1.0]]), ">= 0"),
    ],
)
def test_predictors_reject_bad_matrices(observed, message):
    for model in (MeanBaseline(), MatrixCompletion(1)):
        with pytest.raises(InvalidInstanceError, match=message):
            model.fit(observed)


@needs_sklearn
def test_rank_cannot_exceed_the_number_of_types():
    obs = generate_interference_truth(3, seed=0).observe_pairs(1.0, 0.0, seed=0)
    with pytest.raises(InvalidInstanceError, match="rank"):
        MatrixCompletion(4).fit(obs)
    model = MatrixCompletion("auto", candidate_ranks=(1, 2, 5)).fit(obs)
    assert set(model.cv_rmse_) == {1, 2}


@needs_sklearn
def test_regressor_rejects_samples_of_unknown_types():
    truth = generate_interference_truth(6, seed=0)
    samples = truth.sample_colocations(10, seed=0)
    with pytest.raises(InvalidInstanceError, match="samples"):
        CoLocationRegressor().fit(truth.measured_profiles()[:2], samples)


def test_bad_predictor_options():
    with pytest.raises(InvalidInstanceError, match="rank"):
        MatrixCompletion(0)
    with pytest.raises(InvalidInstanceError, match="kind"):
        MeanBaseline("median")  # type: ignore[arg-type]
    with pytest.raises(InvalidInstanceError, match="model"):
        CoLocationRegressor("svm")  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="fit"):
        MatrixCompletion(1).predict_matrix()


def test_truth_must_be_an_interference_truth_with_enough_types():
    truth = InterferenceTruth(profiles=np.full((3, 4), 0.5), standalone_times=np.ones(3))
    with pytest.raises(InvalidInstanceError, match="cold_types"):
        compare_predictors(truth, cold_types=3)


def test_learned_predictors_name_the_ml_extra_when_scikit_learn_is_missing(monkeypatch):
    import optsched.interference._sklearn as extra

    monkeypatch.setattr(extra, "find_spec", lambda name: None)
    obs = generate_interference_truth(3, seed=0).observe_pairs(1.0, 0.0, seed=0)
    with pytest.raises(MissingExtraError, match=r"optsched\[ml\]"):
        MatrixCompletion(1).fit(obs)
    truth = generate_interference_truth(4, seed=0)
    with pytest.raises(MissingExtraError, match=r"optsched\[ml\]"):
        CoLocationRegressor().fit(truth.measured_profiles(), truth.sample_colocations(5, seed=0))
    # The baselines need only NumPy.
    assert MeanBaseline("row").fit(obs).predict_matrix().shape == (3, 3)


def test_scores_table():
    scores = PredictorScores(
        [PredictorScore("mean-global", 0.2, 0.1, 0.5), PredictorScore("completion", 0.1, 0.05, 0.3)]
    )
    frame = scores.to_frame()
    assert list(frame["name"]) == ["mean-global", "completion"]
    assert frame.loc[1, "rmse"] == 0.1
    assert repr(scores) == "PredictorScores(2 predictors, lowest held-out RMSE: completion)"
