"""core.cuda_graphs (method key `cuda_graphs: true`) against a stand-in for torch.cuda's
graph API that runs on this CPU (tests/helpers/fake_cuda_graphs.py, checked against torch's
real signatures in tests/sim/test_fakes.py): capture after a side-stream warm-up, replay per
step, the check against eager, a capture that fails, and the profile job's rows."""

from __future__ import annotations

import gc
import math

import pytest
import torch
from helpers import fake_cuda_graphs as fake
from helpers.profile_job import job
from helpers.timm_models import register
from torch import nn

from joulebench.core import cuda_graphs
from joulebench.core.arithmetic import IEEE, Arithmetic, applied
from joulebench.core.backends import backend_for, bound_device
from joulebench.core.backends.cuda import cuda_native
from joulebench.core.cuda_graphs import GraphStep, capture, graph_step
from joulebench.core.methods import PRESETS, Method, parse_methods
from joulebench.core.runtimes import NotMeasured
from joulebench.jobs.profile import ProfileJob, run_profile


class _Net(nn.Module):
    def __init__(self, num_classes=10, **kwargs):
        super().__init__()
        self.num_classes = num_classes
        self.conv = nn.Conv2d(3, 8, 3, stride=2)
        self.act = nn.ReLU(inplace=True)
        self.fc = nn.Linear(8, num_classes)

    def forward(self, x):
        return self.fc(self.act(self.conv(x)).mean((2, 3)).view(x.shape[0], -1))


class _Syncs(_Net):
    """A forward that reads a value back to the host (data-dependent control flow)."""

    def forward(self, x):
        y = super().forward(x)
        return y * 2 if y.sum().item() > 0 else y


class _Counts(_Net):
    """A forward whose result depends on Python state: a graph freezes it at capture."""

    calls = 0

    def forward(self, x):
        self.calls += 1
        return super().forward(x) + self.calls


register("jbgraph_net", _Net)


@pytest.fixture(autouse=True)
def device():
    fake.reset()
    yield
    fake.reset()


def _batch(n=2):
    torch.manual_seed(0)
    return torch.randn(n, 3, 16, 16)


def test_a_replay_runs_the_captured_forward_again_on_the_static_input():
    model, x = _Net().eval(), _batch()
    step, fields = graph_step(
        model, x, Method("g", cuda_graphs=True), bound_device("cpu"), cuda=fake
    )
    assert isinstance(step, GraphStep) and step.static_input is x
    assert fields["runtime_provider"] == "cuda-graph"
    assert fields["runtime_check_rel_err"] == 0.0  # the same kernels on the same batch
    assert math.isfinite(fields["cuda_graph_capture_s"]) and fields["cuda_graph_capture_s"] >= 0
    with torch.inference_mode():
        expected = model(x)
        x.copy_(_batch() * 3)  # new data into the static input, as a server would
        step()
        assert torch.allclose(step.static_output, model(x))
        assert not torch.allclose(step.static_output, expected)
    assert step.graph.replays == 2  # the check's, and this step's


def test_the_step_keeps_the_model_a_graph_only_reads_by_address():
    """A CUDA graph holds its weights' addresses, not the tensors: the step must keep the
    model alive once the caller lets go of it (as the profile job's `prepare` does)."""
    x = _batch()
    step, _ = graph_step(
        _Net().eval(), x, Method("g", cuda_graphs=True), bound_device("cpu"), cuda=fake
    )
    gc.collect()
    step()
    with torch.inference_mode():
        assert torch.equal(step.static_output, step.model(x))
    graph, _, _ = _captured_then_dropped(x)
    gc.collect()
    with pytest.raises(RuntimeError, match="illegal memory access"):
        graph.replay()  # the fake's physics: the weights were freed under the graph


def _captured_then_dropped(x):
    model = _Net().eval()
    with torch.inference_mode():
        return capture(lambda: model(x), fake)


def test_the_capture_runs_nothing_until_a_replay():
    """What a capture returns is garbage until replayed (the fake's physics, as CUDA's):
    graph_step compares a replay's output, never the capture's."""
    model, x = _Net().eval(), _batch()
    with torch.inference_mode():
        graph, eager, out = capture(lambda: model(x), fake)
        assert torch.isnan(out).all() and torch.isfinite(eager).all()
        graph.replay()
        assert torch.equal(out, eager)


def test_with_autotuning_the_warm_up_on_a_side_stream_is_what_lets_capture_work():
    """cuDNN times a shape's convolutions on its first call (it allocates and syncs):
    inside a capture that raises, so the warm-up iterations come first."""
    model, x = _Net().eval(), _batch()
    with applied(Arithmetic(IEEE, cudnn_autotune=True)), torch.inference_mode():
        with pytest.raises(RuntimeError, match="cuDNN benchmark ran inside the capture"):
            capture(lambda: model(x), fake, warmup_iters=0)
        fake.reset()
        graph, eager, out = capture(lambda: model(x), fake)
        graph.replay()
        assert torch.equal(out, eager)


def test_a_forward_that_syncs_cannot_be_captured_and_is_skipped_saying_why():
    with pytest.raises(NotMeasured) as raised:
        graph_step(
            _Syncs().eval(), _batch(), Method("g", cuda_graphs=True), bound_device("cpu"), cuda=fake
        )
    assert raised.value.status == "skipped"
    assert raised.value.reason.startswith(
        "CUDA graph capture failed: RuntimeError: CUDA error: operation not permitted when "
        "stream is capturing (item reads a value back to the host)"
    )


def test_a_graph_that_froze_python_state_is_a_mismatch():
    method = Method("g", cuda_graphs=True, tolerance=1e-3)
    with pytest.raises(NotMeasured) as raised:
        graph_step(_Counts().eval(), _batch(), method, bound_device("cpu"), cuda=fake)
    assert raised.value.status == "mismatch"
    assert raised.value.reason.startswith("cuda-graph output differs from PyTorch's")
    assert raised.value.fields["runtime_check_rel_err"] > 1e-3
    assert "cuda_graph_capture_s" in raised.value.fields


def test_the_fakes_capture_refuses_the_default_stream_and_host_syncs():
    graph = fake.CUDAGraph()
    with pytest.raises(RuntimeError, match="legacy default stream"):
        graph.capture_begin()
    with fake.graph(graph), pytest.raises(RuntimeError, match="stream is capturing"):
        fake.synchronize()


# --- the method, and the profile job -----------------------------------------------------


def test_cuda_graphs_is_a_pytorch_inference_method_key():
    assert parse_methods({"g": {"cuda_graphs": True}})["g"].cuda_graphs
    with pytest.raises(ValueError, match="cuda_graphs and compile do not go together"):
        Method("g", cuda_graphs=True, compile="default")
    with pytest.raises(ValueError, match="cuda_graphs applies to runtime pytorch only"):
        Method("g", cuda_graphs=True, runtime="onnxruntime")
    with pytest.raises(ValueError, match="cuda_graphs must be true or false"):
        Method("g", cuda_graphs="yes")
    assert PRESETS["fp16-amp-graphs"] == {"precision": "fp16", "cuda_graphs": True}
    assert PRESETS["tf32-graphs"] == {"precision": "tf32", "cuda_graphs": True}


def _job(device="cpu", phases=("inference",)) -> ProfileJob:
    methods = {"eager": {}, "graphs": {"cuda_graphs": True}}
    return job(
        "jbgraph_net",
        list(methods),
        (2,),
        methods,
        torch_device=device,
        device_label="dev",
        phases=list(phases),
    )


@pytest.mark.parametrize(
    ("device", "phases", "reason"),
    [
        ("cpu", ("inference",), "cuda_graphs needs a CUDA device; cpu: no GPU"),
        (
            "sim:a100",
            ("inference",),
            "cuda_graphs needs a CUDA device; sim:a100: a simulated GPU's model runs on the CPU",
        ),
        ("cpu", ("train",), "cuda_graphs applies to inference"),
    ],
)
@pytest.mark.slow
def test_without_a_gpu_or_in_training_graphs_are_skipped_saying_why(device, phases, reason):
    rows = run_profile(_job(device, phases), log=lambda s: None).rows.set_index("method")
    assert rows.loc["eager", "status"] == "ok"
    assert rows.loc["graphs", ["status", "reason"]].tolist() == ["skipped", reason]
    assert bool(rows.loc["graphs", "cuda_graphs"]) and not bool(rows.loc["eager", "cuda_graphs"])


@pytest.mark.slow
def test_on_a_gpu_every_step_replays_the_graph_captured_before_warm_up(monkeypatch):
    """The CPU backend made to say its model runs on a GPU, torch.cuda's graph API the
    stand-in: the profile job's path end to end, with the rows it writes."""
    backend = backend_for("cpu")
    monkeypatch.setattr(type(backend), "runs_on_gpu", True)
    monkeypatch.setattr(backend.device_class, "native_precisions", lambda self: cuda_native(9, 0))
    graphs = []
    real_graph = fake.CUDAGraph

    def made(keep_graph=False):
        graphs.append(real_graph(keep_graph))
        return graphs[-1]

    monkeypatch.setattr(fake, "CUDAGraph", made)
    monkeypatch.setattr(cuda_graphs, "torch_cuda", lambda: fake)
    rows = run_profile(_job(), log=lambda s: None).rows.set_index("method")
    assert (rows["status"] == "ok").all(), rows["reason"].tolist()
    graph_row, eager_row = rows.loc["graphs"], rows.loc["eager"]
    assert graph_row["runtime_provider"] == "cuda-graph"
    assert graph_row["runtime_check_rel_err"] == 0.0
    assert graph_row["cuda_graph_capture_s"] >= 0 and math.isnan(eager_row["cuda_graph_capture_s"])
    assert graph_row["cudnn_autotune"] and graph_row["fp32_math"] == IEEE
    (graph,) = graphs  # one capture for the configuration
    steps = graph_row["warmup_iters"] + graph_row["images"] / 2  # warm-up, then the windows
    assert graph.replays >= steps + 1  # and the check's replay (lead-ins add more)
