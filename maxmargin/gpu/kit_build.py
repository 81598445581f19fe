"""The kit for an offline GPU node, built here (docs/gpu.md, "Build"): the wheels it lacks and Fashion-MNIST.

The node (docs/gpu.md, "The node") has Python 3.12 with torch, torchvision, timm, numpy, pandas, scikit-learn,
matplotlib and the common libraries (:data:`NODE_PACKAGES`), no package index and no network. What the ViT rules
import beyond that is Snakemake and pandera (maxmargin/tables.py checks every table with it): this takes their
dependency closure as installed in this environment (the versions the tests ran), minus what the node has and
what the session never imports (:data:`NOT_CARRIED`), as CPython 3.12 manylinux x86-64 wheels. Then, where they
keep what travels under its limit, the wheels of :data:`OPTIONAL`: cvxopt (21 MB), whose QP the W-ATT-SVM probe
(rule vit_probe) calls only in its fallbacks (a round whose pivoting cycles, the soft margin where no W meets every
margin): its hard-margin pivoting needs none of it, and a fallback without it fails the probe, which the session
reports (docs/gpu.md). This package itself is not a wheel: the session puts the repository on PYTHONPATH (installed
without dependencies, as the node's torch must serve).

    .venv/bin/python -m maxmargin.gpu.kit_build                  # make gpu-kit
    .venv/bin/python -m maxmargin.gpu.kit_build --have node.txt  # another node: its `pip list --format freeze`
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]  # the repository this package runs from (what travels: its files)
KIT = REPO / "gpu_kit"
TRAVEL_LIMIT = 64 * 2**20  # what goes onto the node: tracked files, untracked ones git does not ignore, the kit
ROOTS = {
    "snakemake": "runs the pipeline's own rules",
    "pandera": "maxmargin/tables.py checks every table the rules write and read",
}
NOT_CARRIED = {
    "pulp": "the ILP scheduler's solver: the session runs --scheduler greedy, which never imports it",
}
# Carried where what travels stays under its limit with them, in this order; else left out, and said.
OPTIONAL = {
    "cvxopt": "the W-ATT-SVM probe's fallbacks (its hard-margin pivoting needs none of it)",
}
# The node's own packages (the workplace's GPU image, as listed on 2026-11-17): a wheel for one of these never travels.
NODE_PACKAGES = """
absl-py accelerate attrs certifi charset-normalizer click cloudpickle colorama contourpy cycler filelock fonttools
fsspec idna jinja2 joblib kiwisolver markdown-it-py markupsafe matplotlib mdurl mypy-extensions networkx numpy
packaging pandas pillow pip platformdirs psutil pygments pyparsing python-dateutil pytz pyyaml requests rich scipy
scikit-learn setuptools six sympy tabulate threadpoolctl timm torch torchvision tqdm typing-extensions typing-inspect
tzdata urllib3 wheel wrapt
""".split()
PLATFORMS = (
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
)
PYTHON_VERSION = "3.12"


def node_markers(python: str = PYTHON_VERSION) -> dict[str, str]:
    """The environment markers of the node's interpreter (CPython ``python`` on Linux x86-64)."""
    env = default_environment()
    env.update(
        python_version=python,
        python_full_version=f"{python}.0",
        sys_platform="linux",
        platform_system="Linux",
        platform_machine="x86_64",
        implementation_name="cpython",
    )
    return env


def closure(roots: dict[str, str], have: set[str], python: str = PYTHON_VERSION) -> dict[str, tuple[str, str]]:
    """Every distribution the roots need on the node, as {name: (installed version, why)}; ``why`` names the chain
    from a root. Requirements behind an extra, or whose marker the node does not meet, are left out."""
    env, found = node_markers(python), {}
    todo = [(canonicalize_name(name), why) for name, why in roots.items()]
    while todo:
        name, why = todo.pop(0)
        if name in found or name in have or name in NOT_CARRIED or (name in OPTIONAL and name not in roots):
            continue
        dist = md.distribution(name)
        found[name] = (dist.version, why)
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({**env, "extra": ""}):
                todo.append((canonicalize_name(req.name), f"{name} <- {why}" if name not in roots else name))
    return found


def wheel_name(path: Path) -> str:
    return canonicalize_name(path.name.split("-")[0])


def download(name: str, version: str, dest: Path, python: str = PYTHON_VERSION) -> Path:
    """The wheel of ``name==version`` for the node, from the kit when already there, else through pip."""
    for path in dest.glob("*.whl"):
        if wheel_name(path) == name and path.name.split("-")[1] == version:
            return path
    pip, spec = [sys.executable, "-m", "pip", "--quiet"], f"{name}=={version}"
    platforms = [arg for p in PLATFORMS for arg in ("--platform", p)]
    node = ["--only-binary=:all:", "--python-version", python, "--implementation", "cp", *platforms]
    proc = subprocess.run([*pip, "download", "--no-deps", *node, "-d", str(dest), spec], capture_output=True, text=True)
    if proc.returncode != 0:  # a release with no wheel (source only): built here, and kept if pure Python
        proc = subprocess.run([*pip, "wheel", "--no-deps", "-w", str(dest), spec], capture_output=True, text=True)
        for path in dest.glob("*.whl"):
            if wheel_name(path) == name and not path.name.endswith("-none-any.whl"):
                path.unlink()
                raise SystemExit(f"gpu-kit: {name}=={version} has no wheel for the node, and it is not pure Python")
    built = [p for p in dest.glob("*.whl") if wheel_name(p) == name and p.name.split("-")[1] == version]
    if proc.returncode != 0 or not built:
        raise SystemExit(f"gpu-kit: pip could not fetch {spec} for the node:\n{proc.stderr.strip()}")
    return built[0]


def fashion_source() -> Path:
    """Where Fashion-MNIST's .gz files are (config key vit.data.fashion_mnist_files of default.yaml)."""
    return Path(
        yaml.safe_load((REPO / "workflow/config/default.yaml").read_text())["vit"]["data"]["fashion_mnist_files"]
    )


def fashion_files(dest: Path) -> list[Path]:
    """Copy Fashion-MNIST's four .gz files into ``dest``."""
    source = fashion_source()
    files = sorted(source.glob("*-ubyte.gz"))
    if len(files) != 4:
        raise SystemExit(
            f"gpu-kit: Fashion-MNIST's four .gz files are not in {source}: install Debian's dataset-fashion-mnist "
            "(apt-get install dataset-fashion-mnist) or set vit.data.fashion_mnist_files"
        )
    dest.mkdir(parents=True, exist_ok=True)
    return [Path(shutil.copy2(f, dest / f.name)) for f in files]


def travel_bytes(kit: Path, leaving: list[Path] = ()) -> tuple[int, int]:
    """(bytes of the repository's files that travel: tracked and untracked-not-ignored, bytes of the kit less the
    files ``leaving`` it)."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout
    paths = {REPO / p.decode() for p in out.split(b"\0") if p}
    repo = sum(p.stat().st_size for p in paths if p.is_file() and not p.is_symlink())
    gone = {p.resolve() for p in leaving}
    return repo, sum(p.stat().st_size for p in kit.rglob("*") if p.is_file() and p.resolve() not in gone)


def read_have(path: Path | None) -> set[str]:
    if path is None:
        return {canonicalize_name(n) for n in NODE_PACKAGES}
    names = re.findall(r"^([A-Za-z0-9_.-]+)", path.read_text(), flags=re.MULTILINE)
    return {canonicalize_name(n) for n in names}


def print_limits(python: str, minutes: float) -> None:
    """How the kit and tools/gpu_session.sh meet each limit of the node (docs/gpu.md, "The node")."""
    print("gpu-kit: the node's limits, and how they are met:")
    for limit, how in (
        (f"Python {python}, no index, no network", f"the cp{python.replace('.', '')} wheels above and the data travel"),
        ("this package not installed", "the repository goes on PYTHONPATH; the node's torch serves"),
        ("64 MiB of files", "the travel size above"),
        ("one command of 10 minutes", f"the session stops itself {minutes:g} minutes after it started"),
        ("8 files of 16 MiB, 2 folders deep", "the session writes at most 8, flat, each when its stage ends"),
        ("a bare machine every time", "the session installs the wheels into a temporary prefix first"),
    ):
        print(f"  {limit:<36} {how}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kit", type=Path, default=KIT, help="the kit's folder (default: gpu_kit/, git-ignored)")
    ap.add_argument("--have", type=Path, help="the node's `pip list --format freeze` (default: NODE_PACKAGES)")
    ap.add_argument("--minutes", type=float, default=9.0, help="the session's wall limit in the printed command")
    ap.add_argument("--python-version", default=PYTHON_VERSION, help="the node's Python (default: %(default)s)")
    args = ap.parse_args()
    wheels = args.kit / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    needed = closure(ROOTS, read_have(args.have), args.python_version)
    print(f"gpu-kit: {len(needed)} wheels for CPython {args.python_version} manylinux x86-64 (the node lacks them):")
    kept = set()
    for name, (version, why) in sorted(needed.items()):
        path = download(name, version, wheels, args.python_version)
        kept.add(path)
        print(f"  {path.name:<70} {path.stat().st_size / 2**20:6.2f} MiB  {why}")
    for name, why in NOT_CARRIED.items():
        print(f"  not carried: {name} ({why})")
    data = fashion_files(args.kit / "fashion-mnist")
    print(f"gpu-kit: Fashion-MNIST: {', '.join(p.name for p in data)}")
    have = read_have(args.have) | set(needed)
    for name, why in OPTIONAL.items():
        extra = closure({name: why}, have, args.python_version)
        paths = [download(n, version, wheels, args.python_version) for n, (version, _) in sorted(extra.items())]
        repo, kit = travel_bytes(args.kit, [p for p in wheels.glob("*.whl") if p not in kept and p not in paths])
        size = sum(p.stat().st_size for p in paths)
        if repo + kit < TRAVEL_LIMIT:
            kept.update(paths)
            for path in paths:
                print(f"  {path.name:<70} {path.stat().st_size / 2**20:6.2f} MiB  {why}")
        else:
            print(
                f"  not carried: {name} ({size / 2**20:.1f} MiB: it would make {(repo + kit) / 2**20:.1f} MiB; {why})"
            )
    for path in set(wheels.glob("*.whl")) - kept:  # one version of each: two stop the node's install
        path.unlink()
    repo, kit = travel_bytes(args.kit)
    total = repo + kit
    verdict = "fits" if total < TRAVEL_LIMIT else "DOES NOT FIT"
    print(
        f"gpu-kit: travel size {total / 2**20:.1f} MiB = repository {repo / 2**20:.1f} MiB + kit {kit / 2**20:.1f} "
        f"MiB, against the limit of {TRAVEL_LIMIT / 2**20:.0f} MiB: {verdict}"
    )
    print_limits(args.python_version, args.minutes)
    print("gpu-kit: on the node, from the repository's root (the kit's folder travels with it):")
    print(f"  bash tools/gpu_session.sh OUT_DIR {args.minutes:g}")
    if total >= TRAVEL_LIMIT:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
