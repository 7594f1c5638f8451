"""A generated launch command checked against its engine's argument rules (``catalogs/engine_args/<engine>.yaml``:
each flag's name, type and allowed values, read from the engine's own source): a renamed, misspelled or mistyped
flag, a value the engine would refuse, an unknown environment variable or YAML key is a problem, named.

Each command block (one per node; ``#`` lines are comments) is split into shell words (``shlex``), then read as
the engine's parser would: leading ``NAME=value`` environment assignments, the program words, its positional
arguments, then ``--flag [value]`` pairs (a ``bool-flag`` takes no value).
"""

from __future__ import annotations

import functools
import json
import math
import shlex
from pathlib import Path

from core._util.checks import load_yaml
from core.serving.launch.spec import ENGINES

__all__ = ["ENGINE_ARGS_DIR", "check_command", "engine_rules"]

ENGINE_ARGS_DIR = Path(__file__).resolve().parents[3] / "catalogs" / "engine_args"
TYPES = ("int", "float", "str", "choice", "json", "bool-flag")


@functools.lru_cache(maxsize=len(ENGINES))
def _rules(engine: str) -> dict:
    path = ENGINE_ARGS_DIR / f"{engine}.yaml"
    data = load_yaml(path.read_text(encoding="utf-8"))
    if not (isinstance(data, dict) and isinstance(data.get("flags"), dict) and isinstance(data.get("program"), list)):
        raise ValueError(f"{path.name}: needs program and flags")
    for name, rule in {**data["flags"], **(data.get("env") or {})}.items():
        if not isinstance(rule, dict) or rule.get("type") not in TYPES or rule.get("source") not in data["sources"]:
            raise ValueError(f"{path.name}: {name} needs a type (one of {', '.join(TYPES)}) and a source of sources")
        if rule["type"] == "choice" and not rule.get("choices"):
            raise ValueError(f"{path.name}: {name} is a choice without choices")
    return data


def engine_rules(engine: str) -> dict:
    """The argument rules of ``engine`` (one of ``ENGINES``), as read from ``catalogs/engine_args``."""
    if not (isinstance(engine, str) and engine in ENGINES):
        raise ValueError(f"engine {engine!r:.40} is not one of: {', '.join(ENGINES)}")
    return _rules(engine)


def _runtime(value: str) -> bool:
    return "$" in value  # a shell expansion the node fills in ("$HEAD_IP", "$((NODE_RANK * 8))")


def _value_problem(name: str, rule: dict, value: str) -> str | None:
    kind = rule["type"]
    if rule.get("runtime") and _runtime(value):
        return None
    try:
        if kind in ("int", "float"):
            x = int(value) if kind == "int" else float(value)
            if not math.isfinite(x):
                return f"{name}: not a finite number"
            lo, hi = rule.get("min"), rule.get("max")
            if lo is not None and x < lo:
                return f"{name} {value}: below the engine's minimum {lo}"
            if hi is not None and x > hi:
                return f"{name} {value}: above the engine's maximum {hi}"
        elif kind == "choice" and value not in [str(c) for c in rule["choices"]]:
            return f"{name} {value!r}: not one of {', '.join(map(str, rule['choices']))}"
        elif kind == "json":
            return _json_problem(name, rule.get("keys") or {}, json.loads(value))
        elif kind == "str" and (not value or value.startswith("-")):
            return f"{name}: a value is missing"
    except ValueError:
        return f"{name} {value!r}: not a valid {kind}"
    return None


def _typed(key: str, spec, v, where: str) -> str | None:
    if isinstance(spec, list):
        return None if v in spec else f"{where}.{key} {v!r}: not one of {', '.join(map(str, spec))}"
    if isinstance(spec, dict):
        return _json_problem(f"{where}.{key}", spec, v)
    ok = {
        "int": isinstance(v, int) and not isinstance(v, bool),
        "float": isinstance(v, (int, float)) and not isinstance(v, bool),
        "bool": isinstance(v, bool),
        "str": isinstance(v, str),
    }.get(spec, False)
    return None if ok else f"{where}.{key} {v!r}: not a {spec}"


def _json_problem(where: str, keys: dict, obj) -> str | None:
    if not isinstance(obj, dict):
        return f"{where}: a JSON object is expected"
    for k, v in obj.items():
        if k not in keys:
            return f"{where}: unknown key {k!r} (known: {', '.join(keys)})"
        problem = _typed(k, keys[k], v, where)
        if problem:
            return problem
    return None


def _block_problems(rules: dict, words: list[str]) -> list[str]:
    out, env_rules, i = [], rules.get("env") or {}, 0
    while i < len(words) and "=" in words[i] and not words[i].startswith("-"):
        name, _, val = words[i].partition("=")
        rule = env_rules.get(name)
        out += [f"unknown environment variable {name}"] if rule is None else []
        out += [p for p in [rule and _value_problem(name, rule, val)] if p]
        i += 1
    program = [str(w) for w in rules["program"]]
    if words[i : i + len(program)] != program:
        return [*out, f"the command does not start with {' '.join(program)}"]
    i += len(program)
    positional = words[i : i + int(rules.get("positional", 0))]
    if len(positional) < int(rules.get("positional", 0)) or any(w.startswith("-") for w in positional):
        out.append("the positional model argument is missing")
    i += len(positional)
    seen: set[str] = set()
    while i < len(words):
        flag = words[i]
        rule = rules["flags"].get(flag)
        if rule is None:
            out.append(f"unknown flag {flag}" if flag.startswith("-") else f"stray word {flag!r}")
            i += 1
            continue
        if flag in seen:
            out.append(f"{flag} is given twice")
        seen.add(flag)
        if rule["type"] == "bool-flag":
            i += 1
            continue
        if i + 1 >= len(words) or (words[i + 1].startswith("--") and rule["type"] != "json"):
            out.append(f"{flag}: a value is missing")
            i += 1
            continue
        out += [p for p in [_value_problem(flag, rule, words[i + 1])] if p]
        i += 2
    return out


def check_command(engine: str, command: str, config_yaml: str = "") -> list[str]:
    """Problems of ``command`` (and its ``config_yaml``, TensorRT-LLM's options file) under ``engine``'s rules;
    an empty list when every block parses."""
    rules = engine_rules(engine)
    if not isinstance(command, str) or not isinstance(config_yaml, str):
        raise ValueError("command and config_yaml must be text")
    problems: list[str] = []
    blocks = [b for b in command.replace("\\\n", " ").split("\n\n") if b.strip()]
    for n, block in enumerate(blocks):
        try:
            words = shlex.split(block, comments=True)
        except ValueError as e:
            problems.append(f"block {n}: not valid shell words ({e})")
            continue
        if words:
            problems += [f"block {n}: {p}" for p in _block_problems(rules, words)]
    if config_yaml.strip():
        try:
            cfg = load_yaml(config_yaml)
        except Exception as e:
            return [*problems, f"options file: not valid YAML ({str(e)[:100]})"]
        problems += [f"options file: {p}" for p in [_json_problem("yaml", rules.get("yaml_keys") or {}, cfg)] if p]
    if not blocks:
        problems.append("no command")
    return problems
