"""Methods a device only emulates (core.emulation; issue 24 item 4): what each kind of
device runs natively (from fake /proc/cpuinfo texts, compute capabilities and gfx names),
the profile job's skipped rows and forced `emulated` rows on this CPU, `joulebench devices`,
`joulebench profile --allow-emulated`, the plan, and the method key in the schema."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from helpers.profile_job import job
from helpers.timm_models import register
from torch import nn

from joulebench.cli import main
from joulebench.core.backends import Libraries, NativePrecisions, bound_device
from joulebench.core.backends import cpu as cpu_backend
from joulebench.core.backends.cpu import cpu_flags, native_from_cpuinfo
from joulebench.core.backends.cuda import cuda_native
from joulebench.core.backends.rocm import rocm_native
from joulebench.core.emulation import method_verdict, native_by_label, verdict
from joulebench.core.methods import Method, parse_methods
from joulebench.flags import FLAG_EMULATED, has_flag
from joulebench.jobs import profile as profile_module
from joulebench.jobs.profile import ProfileJob, run_profile
from joulebench.prerun import load_study
from joulebench.study import ConfigError

# /proc/cpuinfo as Linux writes it (one processor each, flags abridged where marked).
XEON_AVX512 = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Processor
flags\t\t: fpu vme sse sse2 ssse3 fma avx f16c avx2 avx512f avx512dq avx512cd avx512bw \
avx512vl avx512vbmi avx512_vbmi2 gfni avx512_vnni avx512_bitalg avx512_vpopcntdq
vmx flags\t: vnmi preemption_timer invvpid ept_x_only ept_ad ept_1gb
bugs\t\t: spectre_v1 spectre_v2
"""
EPYC_AVX2 = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 7B12
flags\t\t: fpu vme sse sse2 ssse3 fma avx f16c avx2 bmi1 bmi2 sha_ni clzero
"""
ZEN4 = EPYC_AVX2.replace("7B12", "9654").replace("clzero", "avx512f avx512_bf16 avx512_vnni")
SAPPHIRE_RAPIDS = XEON_AVX512.replace(
    "avx512_vpopcntdq", "avx512_vpopcntdq avx512_bf16 avx512_fp16 amx_bf16 amx_tile amx_int8"
)
NEOVERSE_V1 = """processor\t: 0
BogoMIPS\t: 2100.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm \
jscvt fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm \
ssbs paca pacg dcpodp svei8mm svebf16 i8mm bf16 dgh rng
CPU implementer\t: 0x41
"""
NEOVERSE_N1 = NEOVERSE_V1.replace(" svei8mm svebf16 i8mm bf16", "")


class _Tiny(nn.Module):
    def __init__(self, num_classes=10, **kwargs):
        super().__init__()
        self.num_classes = num_classes
        self.conv = nn.Conv2d(3, 4, 3, stride=4)
        self.fc = nn.Linear(4, num_classes)

    def forward(self, x):
        return self.fc(self.conv(x).mean((2, 3)))


register("jbemu_tiny", _Tiny)


@pytest.fixture
def fake_cpu(tmp_path, monkeypatch):
    """Make this CPU's flags file a fake one with the given text; returns its path."""

    def use(text: str) -> str:
        path = tmp_path / "cpuinfo"
        path.write_text(text)
        monkeypatch.setattr(cpu_backend, "CPUINFO", str(path))
        return str(path)

    return use


# --- what each kind of device runs natively ------------------------------------------------


@pytest.mark.parametrize(
    ("text", "native"),
    [
        (XEON_AVX512, ("fp32",)),  # AVX-512, but no bf16 instructions (this dev machine)
        (EPYC_AVX2, ("fp32",)),  # issue 24's cloud CPU
        (ZEN4, ("fp32", "bf16")),
        (SAPPHIRE_RAPIDS, ("fp32", "fp16", "bf16")),
        (NEOVERSE_V1, ("fp32", "fp16", "bf16")),
        (NEOVERSE_N1, ("fp32", "fp16")),
    ],
)
def test_a_cpus_native_precisions_come_from_its_flags(text, native, tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text(text)
    found = bound_device("cpu", libs=Libraries(cpuinfo=str(path))).native_precisions()
    assert found.native == native
    assert set(found.why_not) == {"fp16", "bf16", "tf32"} - set(native)  # no CPU has TF32
    assert found.why_not["tf32"].startswith("a CPU has no TF32 (NVIDIA tensor cores")
    if "bf16" in found.why_not and "Features" not in text:
        assert found.why_not["bf16"] == f"this CPU has no avx512_bf16 or amx_bf16 in {path}"


@pytest.mark.parametrize(
    ("text", "environ", "native"),
    [
        (SAPPHIRE_RAPIDS, {"ONEDNN_MAX_CPU_ISA": "AVX2"}, ("fp32",)),
        (SAPPHIRE_RAPIDS, {"ONEDNN_MAX_CPU_ISA": "avx512_core_bf16"}, ("fp32", "bf16")),
        (SAPPHIRE_RAPIDS, {"DNNL_MAX_CPU_ISA": "AVX512_CORE_VNNI"}, ("fp32",)),
        (SAPPHIRE_RAPIDS, {"ONEDNN_MAX_CPU_ISA": "ALL", "DNNL_MAX_CPU_ISA": "AVX2"}, None),
        (SAPPHIRE_RAPIDS, {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_AMX"}, None),
        (SAPPHIRE_RAPIDS, {"ONEDNN_MAX_CPU_ISA": "NOT_AN_ISA"}, None),
        (EPYC_AVX2, {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_AMX_FP16"}, ("fp32",)),  # never adds
    ],
)
def test_onednns_isa_cap_takes_precisions_away(text, environ, native, tmp_path):
    """ONEDNN_MAX_CPU_ISA (else DNNL_MAX_CPU_ISA) below a precision's instructions makes
    oneDNN emulate it (bf16 22x slower than fp32 on this VM with AVX2): it is emulated."""
    path = tmp_path / "cpuinfo"
    path.write_text(text)
    libs = Libraries(cpuinfo=str(path))
    uncapped = bound_device("cpu", libs=libs).native_precisions()
    libs.environ = environ
    found = bound_device("cpu", libs=libs).native_precisions()
    assert found.native == (native or uncapped.native)
    for precision in set(uncapped.native) - set(found.native):
        name = next(k for k in ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA") if k in environ)
        assert found.why_not[precision].startswith(f"{name}={environ[name].upper()} keeps")
        assert name in found.basis


def test_cpu_flags_are_the_processors_own_line_and_unreadable_means_not_known(tmp_path):
    assert cpu_flags(XEON_AVX512)[1] >= {"avx512f", "avx512_vnni"}
    assert "vnmi" not in cpu_flags(XEON_AVX512)[1]  # the `vmx flags` line is not the CPU's
    assert native_from_cpuinfo("machine: Apple M2\n") is None  # not Linux's format
    missing = Libraries(cpuinfo=str(tmp_path / "nope"))
    assert bound_device("cpu", libs=missing).native_precisions() is None


def _cuda_torch(capability=(7, 0), available=True, hip=None, arch=""):
    """torch as a CUDA (or, with `hip`, ROCm) build sees one GPU: the properties read here."""
    props = SimpleNamespace(name="GPU", major=capability[0], minor=capability[1], gcnArchName=arch)
    cuda = SimpleNamespace(
        is_available=lambda: available,
        device_count=lambda: 1 if available else 0,
        get_device_properties=lambda i: props,
    )
    version = SimpleNamespace(cuda=None if hip else "12.8", hip=hip)
    return SimpleNamespace(__version__="2.14.1", version=version, cuda=cuda)


@pytest.mark.parametrize(
    ("capability", "native"),
    [
        ((6, 0), ("fp32", "fp16")),  # P100: fast fp16
        ((6, 1), ("fp32",)),  # GTX 1080, P40: fp16 at 1/64 rate
        ((7, 0), ("fp32", "fp16")),  # V100
        ((7, 5), ("fp32", "fp16")),  # T4
        ((8, 0), ("fp32", "tf32", "fp16", "bf16")),  # A100: TF32 and bf16 from Ampere
        ((9, 0), ("fp32", "tf32", "fp16", "bf16")),  # H100, H200
    ],
)
def test_an_nvidia_gpus_native_precisions_follow_its_compute_capability(capability, native):
    libs = Libraries(torch=_cuda_torch(capability), rocm=False)
    found = bound_device("cuda:0", libs=libs).native_precisions()
    assert found.native == native
    assert found.basis == f"compute capability {capability[0]}.{capability[1]}"
    if "tf32" not in native:
        assert found.why_not["tf32"].endswith("before Ampere's TF32 tensor cores (8.0)")


@pytest.mark.parametrize("capability", [(6, 0), (7, 0), (7, 5), (8, 0), (8, 6), (9, 0), (10, 0)])
def test_the_bf16_line_is_torchs_own(capability, monkeypatch):
    """torch.cuda.is_bf16_supported(including_emulation=False), the real function, on a GPU
    of each capability: the same answer as the CUDA backend's."""
    props = SimpleNamespace(major=capability[0], minor=capability[1])
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device=None: props)
    torchs = torch.cuda.is_bf16_supported(including_emulation=False)
    assert torchs == ("bf16" in cuda_native(*capability).native)


def test_a_gpu_torch_cannot_see_is_not_known():
    libs = Libraries(torch=_cuda_torch(available=False), rocm=False)
    assert bound_device("cuda:0", libs=libs).native_precisions() is None


@pytest.mark.parametrize(
    ("arch", "native"),
    [
        ("gfx906:sramecc+:xnack-", ("fp32", "fp16")),  # MI50/MI60: no bf16 hardware
        ("gfx908:sramecc+:xnack-", ("fp32", "fp16", "bf16")),  # MI100
        ("gfx90a:sramecc+:xnack-", ("fp32", "fp16", "bf16")),  # MI210/MI250
        ("gfx942:sramecc+:xnack-", ("fp32", "fp16", "bf16")),  # MI300X
        ("gfx1030", ("fp32", "fp16")),  # RDNA 2
        ("gfx1100", ("fp32", "fp16", "bf16")),  # RDNA 3 (WMMA)
    ],
)
def test_an_amd_gpus_native_precisions_follow_its_gfx_arch(arch, native):
    libs = Libraries(torch=_cuda_torch(hip="6.2", arch=arch), rocm=True)
    device = bound_device("cuda:0", libs=libs)
    assert device.kind == "rocm"
    assert device.native_precisions().native == native
    assert "NVIDIA GPUs only" in device.native_precisions().why_not["tf32"]
    assert rocm_native("not-a-gfx-name") is None  # unknown: every method measured


@pytest.mark.parametrize(
    ("device", "bf16"), [("sim:pascal", False), ("sim:v100", False), ("sim:a100", True)]
)
def test_a_simulated_gpu_runs_what_its_generations_gpu_runs(device, bf16):
    found = bound_device(device).native_precisions()
    assert ("bf16" in found.native) == bf16 and "fp16" in found.native
    assert ("tf32" in found.native) == bf16  # both from Ampere


def test_native_by_label_asks_each_devices_backend(fake_cpu):
    fake_cpu(EPYC_AVX2)
    native = native_by_label({"cpu": "cpu", "v100": "sim:v100", "x": "sim:nope", "y": "tpu"})
    assert native["cpu"].native == ("fp32",) and native["v100"].native == ("fp32", "fp16")
    assert native["x"] is None and native["y"] is None  # no such device: not known


# --- the verdict: skipped unless forced, then flagged -------------------------------------

NO_BF16 = NativePrecisions(("fp32",), {"bf16": "this CPU has no avx512_bf16", "fp16": "none"})


def test_an_emulated_method_is_skipped_saying_why_and_how_to_force_it():
    bf16 = Method("bf16", precision="bf16")
    skipped = verdict(bf16, NO_BF16)
    assert skipped.skip_reason == (
        "bf16 is only emulated here: this CPU has no avx512_bf16; not measured "
        "(allow_emulated: true on method bf16 measures it; joulebench profile: --allow-emulated)"
    )
    assert skipped.flag == "" and skipped.fields == {}
    forced = verdict(Method("bf16", precision="bf16", allow_emulated=True), NO_BF16)
    assert forced.skip_reason == "" and forced.fields == {"flags": FLAG_EMULATED}
    assert verdict(Method("fp32"), NO_BF16).skip_reason == ""
    assert verdict(bf16, None).skip_reason == ""  # not known here: measured


AMPERE, VOLTA = cuda_native(8, 0), cuda_native(7, 0)


@pytest.mark.parametrize("allow_emulated", [False, True])
def test_tf32_is_skipped_where_it_does_not_run_and_nothing_forces_it(allow_emulated):
    """Without TF32 torch would run IEEE fp32 under tf32's name: allow_emulated cannot make
    that a measurement (unlike bf16, which an emulating device really computes)."""
    tf32 = Method("tf32", precision="tf32", allow_emulated=allow_emulated)
    skipped = verdict(tf32, VOLTA)
    assert skipped.skip_reason == (
        "tf32 does not run here: compute capability 7.0, before Ampere's TF32 tensor cores "
        "(8.0); not measured, and allow_emulated does not force it (torch would run IEEE "
        "fp32 under the name tf32)"
    )
    assert skipped.flag == ""
    assert verdict(tf32, AMPERE) == verdict(Method("fp32"), VOLTA)  # measured, unflagged
    assert verdict(tf32, None).skip_reason == ""  # the plan, not knowing: measured


def test_the_job_skips_tf32_where_what_runs_natively_is_not_known(fake_cpu, tmp_path):
    missing = Libraries(cpuinfo=str(tmp_path / "nope"))
    cpu = bound_device("cpu", libs=missing)
    tf32 = Method("tf32", precision="tf32")
    assert method_verdict(cpu, Method("bf16", precision="bf16")).skip_reason == ""
    reason = method_verdict(cpu, tf32).skip_reason
    assert reason.startswith("tf32 does not run here: what cpu runs natively is not known")


# --- the profile job on this CPU, with a fake flags file ----------------------------------

METHODS = {
    "fp32": {"precision": "fp32"},
    "bf16": {"precision": "bf16"},
    "bf16-forced": {"precision": "bf16", "allow_emulated": True},
    "tf32-forced": {"precision": "tf32", "allow_emulated": True},
}


def _job() -> ProfileJob:
    return job("jbemu_tiny", list(METHODS), (2,), METHODS)


def _counting_builds(monkeypatch) -> list[str]:
    built, real = [], profile_module.build

    def counting(model_name, method, *args, **kw):
        built.append(method.name)
        return real(model_name, method, *args, **kw)

    monkeypatch.setattr(profile_module, "build", counting)
    return built


@pytest.mark.slow
def test_a_cpu_without_bf16_skips_bf16_before_building_and_measures_it_when_forced(
    fake_cpu, monkeypatch
):
    path = fake_cpu(EPYC_AVX2)
    built, logged = _counting_builds(monkeypatch), []
    rows = run_profile(_job(), log=logged.append).rows.set_index("method")
    assert rows.loc["fp32", "status"] == "ok" and rows.loc["bf16-forced", "status"] == "ok"
    assert rows.loc["bf16", "status"] == "skipped"
    assert rows.loc["tf32-forced", "status"] == "skipped"  # a CPU: forced or not
    assert "allow_emulated does not force it" in rows.loc["tf32-forced", "reason"]
    assert rows.loc["bf16", "reason"].startswith(
        f"bf16 is only emulated here: this CPU has no avx512_bf16 or amx_bf16 in {path}; "
    )
    assert "allow_emulated: true on method bf16 measures it" in rows.loc["bf16", "reason"]
    assert built == ["fp32", "bf16-forced"]  # the skipped one was never built
    # The forced one is measured, flagged (not invalidating), beside the protocol's flags.
    assert has_flag(rows.loc["bf16-forced", "flags"], FLAG_EMULATED)
    assert not has_flag(rows.loc["fp32", "flags"], FLAG_EMULATED)
    assert rows.loc["bf16-forced", "energy_per_image_j"] > 0
    assert any("bf16 bs2: skipped bf16 is only emulated here" in line for line in logged)


@pytest.mark.slow
def test_a_cpu_with_bf16_measures_it_unflagged(fake_cpu):
    fake_cpu(ZEN4)
    rows = run_profile(_job(), log=lambda s: None).rows.set_index("method")
    assert (rows.drop(index="tf32-forced")["status"] == "ok").all()
    for method in ("bf16", "bf16-forced"):
        assert not has_flag(rows.loc[method, "flags"], FLAG_EMULATED)


@pytest.mark.slow
def test_joulebench_profile_allow_emulated(fake_cpu, capsys, monkeypatch):
    fake_cpu(EPYC_AVX2)
    monkeypatch.setenv("JOULEBENCH_IN_PROCESS", "1")  # the faked CPU is this process's
    argv = ["profile", "jbemu_tiny", "--method", "bf16", "--preset", "smoke", "--threads", "1"]
    argv += ["--quiet-wait-s", "0"]
    assert main(argv) == 1  # nothing measured: the reason says how to force it
    assert "--allow-emulated" in capsys.readouterr().err
    assert main([*argv, "--allow-emulated"]) == 0
    assert " ok " in capsys.readouterr().out


# --- joulebench devices, the plan, the method key ------------------------------------------


def test_joulebench_devices_lists_native_precisions(fake_cpu, tmp_path, capsys):
    study = tmp_path / "study.yaml"
    study.write_text("devices: {cpu: cpu}\n")
    path = fake_cpu(EPYC_AVX2)
    assert main(["devices", "--configfile", str(study)]) == 0
    out = capsys.readouterr().out
    assert "  native precisions: fp32\n  emulated: bf16, fp16 (skipped rows, unless " in out
    assert f"    bf16: this CPU has no avx512_bf16 or amx_bf16 in {path}" in out
    assert "  not run: tf32 (skipped rows, even with allow_emulated: torch would run" in out
    fake_cpu(SAPPHIRE_RAPIDS)
    assert main(["devices", "--configfile", str(study)]) == 0
    out = capsys.readouterr().out
    assert "  native precisions: fp32, fp16, bf16\n" in out and "\n  emulated:" not in out
    assert "  not run: tf32" in out  # every CPU


def test_joulebench_plan_counts_this_cpus_emulated_configurations(fake_cpu, tmp_path, capsys):
    study = tmp_path / "study.yaml"
    study.write_text(
        "models: [resnet18.a1_in1k]\ndevices: {cpu: cpu}\nbatch_sizes: [1, 8]\n"
        "methods: {fp32: {precision: fp32}, bf16: {precision: bf16}}\n"
    )
    fake_cpu(EPYC_AVX2)
    assert main(["plan", "--configfile", str(study)]) == 0
    out = capsys.readouterr().out
    assert "4 configurations = 1 device x 1 model x 2 methods" in out
    assert "cpu: 2 configurations skipped (~0 s each): bf16 is only emulated here" in out
    fake_cpu(ZEN4)
    assert main(["plan", "--configfile", str(study)]) == 0
    assert "skipped" not in capsys.readouterr().out
    study.write_text(
        study.read_text().replace("bf16: {precision: bf16}", "tf32: {precision: tf32}")
    )
    assert main(["plan", "--configfile", str(study)]) == 0
    out = capsys.readouterr().out
    assert "cpu: 2 configurations skipped (~0 s each): tf32 does not run here (a CPU has no" in out
    assert "nothing forces it" in out


def test_allow_emulated_is_a_method_key(tmp_path):
    assert parse_methods({"b": {"precision": "bf16", "allow_emulated": True}})["b"].allow_emulated
    assert Method("m").allow_emulated is False  # the schema's default (test_config)
    with pytest.raises(ValueError, match="allow_emulated must be true or false"):
        Method("m", allow_emulated="yes")
    study = tmp_path / "study.yaml"
    study.write_text("methods: {bf16: {precision: bf16, allow_emulated: 'yes'}}\n")
    with pytest.raises(ConfigError, match="allow_emulated"):
        load_study(str(study))
