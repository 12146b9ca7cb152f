"""Inputs that used to hang, exhaust memory or print a traceback: each is one line
`attnsim: error: <where>: <what>` now, quickly (issue 22 items 6-7)."""

from __future__ import annotations

import gc
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from helpers.configs import REPO, small_config
from helpers.workflow import attnsim

from attnsim.cli.main import main
from attnsim.config import guard, yamlfile
from attnsim.config.load import load, load_file
from attnsim.config.overrides import split_args
from attnsim.errors import ConfigError

ALIAS_BOMB = """\
a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]
i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]
seed: 1
experiments: {x: {kind: noisy_attention, trials: 2, grid: {n: [16], d: [2], noise: *i}}}
"""


def one_line(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("attnsim: error: "), err
    return err[0]


def test_alias_bomb_is_refused_in_check_config_quickly(tmp_path, capsys):
    (tmp_path / "bomb.yaml").write_text(ALIAS_BOMB)
    started = time.perf_counter()
    line = one_line(capsys, ["check-config", str(tmp_path / "bomb.yaml")])
    assert (
        "aliases" in line and "expand to more than 1,000,000 values" in line and "bomb.yaml" in line
    )
    assert time.perf_counter() - started < 5


def test_alias_bomb_is_refused_by_run_before_snakemake_reads_it(tmp_path):
    (tmp_path / "bomb.yaml").write_text(ALIAS_BOMB)
    run = attnsim(tmp_path, "run", "-n", "--configfile", "bomb.yaml", timeout=60)
    lines = run.stderr.strip().splitlines()
    assert (
        run.returncode == 2 and lines == [lines[0]] and "bomb.yaml: its YAML aliases" in lines[0]
    ), run.stderr


@pytest.mark.parametrize("name", ["bomb.yaml", "big.yaml"])
def test_plain_snakemake_applies_the_same_caps(tmp_path, name):
    """`snakemake --configfile X` (no `attnsim run`) reads the file itself first; the workflow's
    config loading then makes `attnsim run`'s checks (size, aliases) and stops in one line."""
    (tmp_path / "bomb.yaml").write_text(ALIAS_BOMB)
    (tmp_path / "big.yaml").write_text(
        yaml.safe_dump(small_config()) + ("# " + "x" * 98 + "\n") * (9 * 2**20 // 100)
    )
    snakefile = REPO / "workflow/Snakefile"
    run = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(snakefile), "-n", "--configfile", name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    errors = [line for line in run.stderr.splitlines() if line.startswith("attnsim: error:")]
    needle = "its YAML aliases" if name == "bomb.yaml" else "MiB, over the 8 MiB a config may have"
    assert run.returncode != 0 and len(errors) == 1 and needle in errors[0], run.stderr[-2000:]


def test_a_few_aliases_are_fine():
    node = yaml.compose("a: &a [1, 2]\nb: [*a, *a]\n", Loader=yaml.SafeLoader)
    # the mapping, 2 keys, [1, 2] (3) and [*a, *a] (1 + 2 x 3)
    assert yamlfile.expanded_size(node) == 13


def test_a_grid_of_10_to_the_8_points_is_refused_before_expansion():
    config = small_config()
    # x 2 logit scales x 2 noises
    config["experiments"]["robustness"]["grid"] |= {
        "n": list(range(2, 102)),
        "d": list(range(1, 101)),
        "noise_scale": [0.01 * i for i in range(1, 101)],
        "noise_draws": list(range(1, 26)),
    }
    started = time.perf_counter()
    with pytest.raises(ConfigError) as error:
        load(config)
    text = str(error.value)
    assert text.startswith(
        "experiments.robustness.grid: 100,000,000 points (n: 100 x d: 100 x logit_scale: 2 x "
        "noise: 2 x noise_draws: 25 x noise_scale: 100)"
    ), text
    assert (
        "over max_points = 10,000,000" in text
        and "about 14.9 GiB of memory" in text
        and "\n" not in text
    )
    assert time.perf_counter() - started < 5
    guard.check_size(config["experiments"], 10**8)  # the cap is what refused it


def test_the_grid_cap_is_configurable():
    config = small_config(max_points=15)  # the small grid has 16 points
    with pytest.raises(ConfigError, match="16 points .* over max_points = 15"):
        load(config)
    assert load(small_config(max_points=16)).experiments


@pytest.mark.parametrize(
    ("names", "needle"),
    [
        (["trials"], "experiments.trials: reserved, the store's view `trials`"),
        (["summary"], "experiments.summary: reserved"),
        (["provenance"], "experiments.provenance: reserved"),
        # the schema's pattern
        (["_provenance"], "experiment name '_provenance' must be lower-case letters"),
        (["x", "x_trials"], "experiments.x_trials: reserved, the view of experiment x's trials"),
        (["a" * 48], "ends in a part repeated 20 times"),
        (["run_" + "ab" * 20], "ends in a part repeated 20 times"),
    ],
)
def test_reserved_and_periodic_names_are_refused(names, needle):
    config = small_config()
    spec = config["experiments"].pop("robustness")
    config["experiments"] = {name: spec for name in names}
    with pytest.raises(ConfigError) as error:
        load(config)
    assert needle in str(error.value) and "\n" not in str(error.value)


def test_names_that_merely_end_in_trials_are_fine():
    config = small_config()
    config["experiments"] = {"x_trials": config["experiments"]["robustness"]}
    assert list(load(config).experiments) == ["x_trials"]


def test_config_files_that_used_to_print_tracebacks(tmp_path, capsys):
    (tmp_path / "latin1.yaml").write_bytes("seed: 1\n# Gr\xfc\xdfe\n".encode("latin-1"))
    assert "latin1.yaml: not UTF-8 text (byte 0xfc on line 2)" in one_line(
        capsys, ["check-config", str(tmp_path / "latin1.yaml")]
    )
    assert f"{tmp_path}: a directory, not a config file" in one_line(
        capsys, ["check-config", str(tmp_path)]
    )
    assert "nope.yaml: no such config file" in one_line(
        capsys, ["check-config", str(tmp_path / "nope.yaml")]
    )
    (tmp_path / "empty.yaml").write_text("")
    assert "empty.yaml: empty" in one_line(capsys, ["check-config", str(tmp_path / "empty.yaml")])
    (tmp_path / "list.yaml").write_text("- seed: 1\n")
    assert "list.yaml: a config is a mapping" in one_line(
        capsys, ["check-config", str(tmp_path / "list.yaml")]
    )


def test_a_50_mb_config_is_refused_at_once(tmp_path):
    path = tmp_path / "huge.yaml"
    with open(path, "w") as f:
        f.write(
            "seed: 1\nexperiments:\n  x:\n    kind: noisy_attention\n    trials: 2\n    grid:\n   "
            "   n: ["
        )
        f.write("16, " * (50 * 2**20 // 4))
        f.write("16]\n")
    started = time.perf_counter()
    with pytest.raises(ConfigError, match=r"huge.yaml: 50.0 MiB, over the 8 MiB a config may have"):
        load_file(path)
    assert time.perf_counter() - started < 1


@pytest.mark.parametrize(
    ("args", "files", "needle"),
    [
        (["--configfile", "missing.yaml"], {}, "missing.yaml: no such config file"),
        (["--config", "a-b=x"], {}, "--set a-b=x: give KEY=VALUE with KEY a config key"),
        (
            ["--set", "experiments.x.trials=3"],
            {"config.yaml": "seed: 1\nexperiments: {}\n"},
            "--set experiments.x.trials=3: the config has no mapping experiments.x (there: none)",
        ),
        (["--configfile", "empty.yaml"], {"empty.yaml": ""}, "empty.yaml: empty"),
        (["--configfile", "list.yaml"], {"list.yaml": "- 1\n"}, "list.yaml: a config is a mapping"),
        (
            ["--configfile", "bad.yaml"],
            {"bad.yaml": b"seed: 1\n\xff\n"},
            "bad.yaml: not UTF-8 text",
        ),
    ],
)
def test_run_arguments_snakemake_would_trip_on_are_one_line(tmp_path, args, files, needle):
    for name, content in files.items():
        (tmp_path / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    run = attnsim(tmp_path, "run", "-n", *args, timeout=60)
    lines = run.stderr.strip().splitlines()
    assert (
        run.returncode == 2
        and len(lines) == 1
        and lines[0].startswith("attnsim: error: ")
        and needle in lines[0]
    ), run.stderr


def test_run_args_parsing():
    assert guard.run_configfiles(["-n", "--configfile", "a.yaml", "b.yaml", "--cores", "2"]) == [
        guard.Path("a.yaml"),
        guard.Path("b.yaml"),
    ]
    assert guard.run_configfiles(["--configfile=a.yaml"]) == [guard.Path("a.yaml")]
    assert split_args(["--config", "seed=3", "chunk_size=2", "-n"])[1] == ["seed=3", "chunk_size=2"]


def million_points_config(**overrides) -> dict:
    config = small_config(**overrides)
    # x 2 logit scales x 2 noises x 1 noise_draws: 10^6 points
    config["experiments"]["robustness"]["grid"] |= {
        "n": list(range(2, 102)),
        "d": list(range(1, 101)),
        "noise_scale": [0.01 * i for i in range(1, 26)],
    }
    return config


def test_chunk_size_1_at_a_million_points_is_refused_before_planning(tmp_path):
    """The issue's case: a valid 10 KB config whose `run -n` took 4 minutes and 7.5 GB, then a
    MemoryError traceback. ceil(points / chunk_size) jobs is known before any expansion."""
    started = time.perf_counter()
    with pytest.raises(ConfigError) as error:
        load(million_points_config(chunk_size=1))
    assert str(error.value) == (
        "chunk_size: 1 point per job makes at least 1,000,000 simulate jobs for the config's "
        "1,000,000 points, over max_jobs = 10,000; remove chunk_size (jobs are sized by cost) or "
        "raise it, or raise max_jobs"
    )
    assert time.perf_counter() - started < 5
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(million_points_config(chunk_size=1)))
    run = attnsim(tmp_path, "run", "-n", timeout=120)
    lines = run.stderr.strip().splitlines()
    assert run.returncode != 0 and "Traceback" not in run.stderr, run.stderr
    assert lines[-1].startswith("attnsim: error: chunk_size: 1 point per job"), run.stderr
    assert not list(tmp_path.glob("results/store/*/*/*/*.parquet"))


def test_a_default_job_cap_refuses_a_tiny_job_minutes_in_one_line():
    """`job_minutes: 1e-9` with 10^5 points planned 100,000 jobs without a word: max_jobs now has
    a default, and the bill (counted after planning) refuses the sweep. Twice the default cap's
    points here (planning costs ~0.2 ms a job: 10^5 of them cost 20 CPU-s)."""
    from attnsim.plan import bill, sweep

    config = small_config(job_minutes=1e-9)
    del config["chunk_size"]
    # 100 x 50 x 2 x 2 x 1 = 20,000 points
    config["experiments"]["robustness"]["grid"] |= {
        "n": list(range(2, 102)),
        "d": list(range(1, 51)),
        "noise_scale": [0.1],
    }
    settings = load(config)
    assert settings.max_jobs == 10_000
    plans = sweep.plan_all(settings, Path("/nonexistent/store"))
    with pytest.raises(ConfigError) as error:
        bill.check_limit(bill.bill(settings, plans, Path("/nonexistent/store")), settings)
    assert str(error.value).startswith(
        "max_jobs: the sweep needs 20,000 simulate jobs, over max_jobs = 10,000; raise "
        "job_minutes (now 1e-09)"
    )


def test_the_name_check_is_linear_in_the_number_of_experiments():
    """40,000 experiments took 86 s in `check-config`: each name was compared with every other."""
    names = [f"e{i}" for i in range(40_000)] + ["e39999_trials"]
    started = time.perf_counter()
    with pytest.raises(ConfigError, match="experiments.e39999_trials: reserved, the view of "):
        guard.check_names(names)
    assert time.perf_counter() - started < 1


# --- generators bounded before expanded (issue 52 item 4) ----------------------------------------

# CPU-seconds (imports included: the machine may be shared) and the process's own peak in KiB
# (VmHWM, per address space: getrusage's ru_maxrss keeps, across exec, the peak of the forked
# pytest worker it started as, which can be a GiB on its own)
PEAK_RSS = """
import sys, time
started = time.process_time()
from attnsim.cli.main import main
code = main(sys.argv[1:])
peak = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0])
print(code, time.process_time() - started, peak)
"""


def test_a_ten_million_value_generator_on_an_integer_axis_is_refused_at_once(tmp_path):
    """The issue's case: `n={linspace: [16, 64, 1e7]}` reached 4.7 GB in 90 s before any check
    answered (10^5 values took 15 s to say n[1] is not an integer)."""
    write = tmp_path / "config.yaml"
    write.write_text(yaml.safe_dump(small_config()))
    item = "experiments.robustness.grid.n={linspace: [16, 64, 10000000]}"
    done = subprocess.run(
        [sys.executable, "-c", PEAK_RSS, "check-config", "--configfile", str(write), "--set", item],
        capture_output=True,
        text=True,
        timeout=120,
    )
    code, seconds, peak_kib = done.stdout.split()
    assert int(code) == 2 and done.stderr == (
        "attnsim: error: experiments.robustness.grid.n: {linspace: [16, 64, 10000000]} gives "
        "16.0000048 (value 2 of 10,000,000), not a whole number; n takes integers\n"
    )
    assert float(seconds) < 5 and int(peak_kib) < 200 * 1024, (seconds, peak_kib)


@pytest.mark.parametrize(
    ("param", "rule", "needle"),
    [
        ("n", {"linspace": [1, 64, 64]}, "reaches 1, below the minimum 2"),
        ("noise_scale", {"logspace": [0.1, 1000, 5]}, "reaches 1000, above the maximum 100"),
        ("noise", {"linspace": [0, 1, 3]}, "gives numbers; noise takes one of gaussian"),
        ("n", {"logspace": [16, 4096, 10]}, "(value 2 of 10), not a whole number"),
    ],
)
def test_a_generator_is_checked_against_its_axis_before_it_is_expanded(param, rule, needle):
    config = small_config()
    config["experiments"]["robustness"]["grid"][param] = rule
    with pytest.raises(ConfigError) as refused:
        load(config)
    message = str(refused.value)
    assert message.startswith(f"experiments.robustness.grid.{param}: ") and needle in message


def test_whole_values_from_a_generator_fill_an_integer_axis():
    config = small_config()
    config["experiments"]["robustness"]["grid"]["n"] = {"logspace": [16, 4096, 9]}
    assert load(config).experiments["robustness"].grid["n"] == [
        16, 32, 64, 128, 256, 512, 1024, 2048, 4096
    ]  # fmt: skip


def test_a_generators_points_count_before_it_is_expanded():
    """10^7 values on a float axis: the points are counted from the generator's count (80
    million here), not after building ten million floats."""
    config = small_config()
    config["experiments"]["robustness"]["grid"]["noise_scale"] = {
        "linspace": [0.01, 64, 10_000_000]
    }
    started = time.process_time()
    with pytest.raises(ConfigError, match=r"80,000,000 points .* noise_scale: 10000000\)"):
        load(config)
    assert time.process_time() - started < 1


@pytest.mark.slow
def test_validation_is_linear_in_the_number_of_experiments(tmp_path):
    """The issue's case: 20,000 experiments took 2 min 19 s to validate. Reading and checking the
    config costs the same per experiment whatever their number (500 against 5,000 here): linear
    is 10x (10.4x measured in a fresh process); the issue's quadratic term (~120 s at 20,000, so
    ~7.5 s at 5,000 on top of ~4.4 s of linear work) would give ~23x. The bound, 15x, sits between
    them with room for a busy test worker's caches (12.2x seen in CI)."""
    experiment = small_config()["experiments"]["robustness"]
    seconds = {}
    for count in (500, 5_000):
        config = {"seed": 7, "experiments": {f"e{i}": experiment for i in range(count)}}
        path = tmp_path / f"c{count}.yaml"
        path.write_text(yaml.safe_dump(config))
        seconds[count] = min(cpu_seconds_to_load(path) for _ in range(2))
    assert seconds[5_000] <= 15 * seconds[500], seconds


def cpu_seconds_to_load(path) -> float:
    """CPU seconds to read and check the config at `path` with the garbage collector off (as
    `timeit` does): a test worker's heap holds every earlier test's objects, and a collector pass
    over it would bill this code for their number."""
    gc.collect()
    gc.disable()
    try:
        started = time.process_time()
        load(yamlfile.load(path))
        return time.process_time() - started
    finally:
        gc.enable()
