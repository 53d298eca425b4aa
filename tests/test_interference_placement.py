"""Predicted kappa feeds the placement instance and the interference ILP."""

from __future__ import annotations

from importlib.util import find_spec

import numpy as np
import pytest

from optsched.interference import (
    MatrixCompletion,
    MeanBaseline,
    generate_interference_truth,
    interference_matrix,
)
from optsched.placement import generate_instance, solve, validate
from optsched.tolerances import OBJECTIVE_AGREEMENT_TOL

#: Slack when comparing objective values recomputed by the validator.
OBJ_ATOL = OBJECTIVE_AGREEMENT_TOL

#: The learned predictors fit scikit-learn models (the ``ml`` extra; the test extra has it).
needs_sklearn = pytest.mark.skipif(
    find_spec("sklearn") is None, reason="scikit-learn (the ml extra) is not installed"
)


def setting(seed: int):
    truth = generate_interference_truth(8, seed=seed)
    inst = generate_instance(5, n_servers=3, gpus=4, max_workers=2, interference=False, seed=seed)
    types = np.random.default_rng(seed).integers(0, 8, size=len(inst.jobs))
    t0 = [job.standalone_time_s for job in inst.jobs]
    return truth, inst, types, t0


def test_kappa_round_trips_through_the_placement_instance():
    truth, inst, types, t0 = setting(0)
    kappa = interference_matrix(truth.pairwise_slowdowns(), types, standalone_times=t0)
    assert np.allclose(inst.with_interference(kappa).kappa, kappa)


@needs_sklearn
@pytest.mark.solver("highs")
@pytest.mark.parametrize("seed", [0, 1])
def test_true_kappa_placement_is_a_lower_bound_for_predicted_ones(seed):
    """The optimum under the true kappa is no worse, under the truth, than any placement
    computed from predicted coefficients: a check that predicted kappa reaches the ILP and the
    validator scores every placement on the same scale."""
    truth, inst, types, t0 = setting(seed)
    true_inst = inst.with_interference(
        interference_matrix(truth.pairwise_slowdowns(), types, standalone_times=t0)
    )
    best = solve(true_inst, "interference")
    assert best.optimal
    observed = truth.observe_pairs(0.4, 0.05, seed=seed)
    for predicted in (
        MatrixCompletion(2, seed=seed).fit(observed).predict_matrix(),
        MeanBaseline("global").fit(observed).predict_matrix(),
        np.zeros((8, 8)),
    ):
        kappa = interference_matrix(predicted, types, standalone_times=t0)
        sol = solve(inst.with_interference(kappa), "interference")
        report = validate(true_inst, sol.solution)
        assert report.ok
        value = report.objectives["interference"]
        assert value is not None and value >= best.objective - OBJ_ATOL
        # The solver's own objective is the predicted-kappa value of the same placement.
        assert sol.objective == pytest.approx(
            validate(inst.with_interference(kappa), sol.solution).objectives["interference"]
        )


@needs_sklearn
def test_type_level_matrix_feeds_the_type_coefficients():
    """A completed type-by-type matrix attaches as the instance's type-level coefficients."""
    truth = generate_interference_truth(3, seed=2)
    names = ("cnn", "rnn", "transformer")  # the placement generator's job types
    observed = truth.observe_pairs(0.7, 0.05, seed=2)
    predicted = MatrixCompletion(1, seed=2).fit(observed).predict_matrix()
    inst = generate_instance(4, n_servers=2, interference=False, types=names, seed=2)
    typed = inst.with_type_interference(names, predicted)
    for a, ta in enumerate(names):
        for b, tb in enumerate(names):
            assert typed.type_kappa.get((ta, tb), 0.0) == pytest.approx(predicted[a, b])
