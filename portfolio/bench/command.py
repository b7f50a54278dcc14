"""Configurations that run a command per task, the contest's way: ``-b 'winner=cmd:./iopddl {file} {timeout}'``.

A researcher who wants another solver (the contest winner's binary, a MIP model script, a student's
code) on a ``portfolio bench`` leaderboard hands its command line: every task runs it once, as the
contest ran its entries (the instance's path and the timeout on the command line, the answer on
the last non-empty stdout line). :mod:`.command_task` runs it; this module parses and checks the
configuration before any task runs (one :class:`BenchError` line otherwise).

Placeholders, expanded in every word of the command (``{{`` and ``}}`` for literal braces):

* ``{file}``: the instance as plain JSON: the file itself when it is ``.json``, else an
  uncompressed copy made once per sweep in a temporary folder (removed when the sweep ends),
  for programs that read only plain JSON (the contest handed plain files);
* ``{file_gz}``: the instance file as given (``.json.gz`` or ``.json``), for programs that read
  gzip themselves;
* ``{timeout}``: the task's time limit in seconds, an integer when it is whole (as the contest
  passed it), else a decimal;
* ``{seed}``: the task's seed.
"""

from __future__ import annotations

import os
import shlex
import shutil
import string
from dataclasses import dataclass, replace
from typing import Optional

from .plan import COMMAND_PREFIX as PREFIX
from .plan import LABELLED, BenchError, Configuration
PLACEHOLDERS = ("file", "file_gz", "timeout", "seed")


@dataclass(frozen=True)
class Command:
    """A configuration's command line: the text as given and its words (shlex-split)."""

    template: str
    argv: tuple[str, ...]
    program: Optional[str] = None
    """The program found when the configuration was resolved (None: its name is a placeholder)."""
    scratch: Optional[str] = None
    """The sweep's temporary folder for uncompressed copies (set by the sweep before tasks run)."""

    def uses(self, name: str) -> bool:
        return any(field == name for word in self.argv for _, field, _, _ in _fields(word))

    def expand(self, values: dict[str, str]) -> list[str]:
        """The command's words with every placeholder replaced."""
        return [word.format(**values) for word in self.argv]

    def with_scratch(self, folder: str) -> "Command":
        return replace(self, scratch=folder)

    def describe(self) -> dict:
        """What rows and ``meta.json`` record of it."""
        return {"template": self.template, "program": self.program}


def _fields(word: str) -> list[tuple]:
    return list(string.Formatter().parse(word))


def format_timeout(seconds: float) -> str:
    """The time limit as the command sees it: ``60`` for 60.0 s (the contest passed integers), ``2.5``."""
    return str(int(seconds)) if float(seconds).is_integer() else repr(float(seconds))


def parse_command(label: str, text: str) -> Command:
    """The command of configuration ``label`` from its text after ``cmd:``, every placeholder checked."""
    try:
        argv = tuple(shlex.split(text))
    except ValueError as exc:
        raise BenchError(f"configuration {label!r}: cannot split its command: {exc}") from None
    if not argv:
        raise BenchError(f"configuration {label!r}: the command is empty (write {label}=cmd:PROGRAM "
                         f"{{file}} {{timeout}})")
    known = ", ".join(f"{{{p}}}" for p in PLACEHOLDERS)
    for word in argv:
        try:
            fields = _fields(word)
        except ValueError as exc:
            raise BenchError(f"configuration {label!r}: bad braces in {word!r} ({exc}); write {{{{ and "
                             f"}}}} for literal braces") from None
        for _, field, spec, conversion in fields:
            if field is None:
                continue
            if field not in PLACEHOLDERS or spec or conversion:
                shown = "{" + field + ("!" + conversion if conversion else "") + (
                    ":" + spec if spec else "") + "}"
                raise BenchError(f"configuration {label!r}: unknown placeholder {shown} in its command "
                                 f"(known: {known})")
    command = Command(text.strip(), argv)
    if not (command.uses("file") or command.uses("file_gz")):
        raise BenchError(f"configuration {label!r}: its command never names the instance; put {{file}} "
                         f"(plain JSON) or {{file_gz}} (the file as given) in it")
    return replace(command, program=_program(label, argv[0]))


def _program(label: str, word: str) -> Optional[str]:
    """The program the command starts, as an absolute path; None when its name is a placeholder."""
    if any(field is not None for _, field, _, _ in _fields(word)):
        return None
    if os.sep in word:
        path = os.path.abspath(os.path.expanduser(word))
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise BenchError(f"configuration {label!r}: {word} is not an executable file")
        return path
    found = shutil.which(word)
    if found is None:
        raise BenchError(f"configuration {label!r}: no program {word!r} on the PATH")
    return found


def command_configuration(spec: str, deterministic: bool = False) -> Configuration:
    """A ``LABEL=cmd:COMMAND`` item of ``--backends`` as a configuration with no backends."""
    text = spec.strip()
    match = LABELLED.match(text)
    if text.startswith(PREFIX) or not match:
        raise BenchError(f"configuration {text!r}: a command configuration needs a name, "
                         f"LABEL=cmd:COMMAND (e.g. winner=cmd:./iopddl {{file}} {{timeout}})")
    label = match.group(1).strip()
    if not label or "/" in label:
        raise BenchError(f"configuration {text!r}: bad name {label!r}")
    if deterministic:
        raise BenchError(f"configuration {label!r} is a command: it has no deterministic mode "
                         f"(leave out --deterministic and --work)")
    command = parse_command(label, match.group(2).lstrip()[len(PREFIX):])
    return Configuration(label, (), (), command=command)


def resume_conflict(old: dict, command: Optional[Command]) -> Optional[str]:
    """Why a kept row cannot stand for this task's configuration (another command), or None."""
    ran = (old.get("command") or {}).get("template")
    now = None if command is None else command.template
    if ran == now:
        return None
    what = lambda t: "the portfolio's backends" if t is None else f"the command `{t}`"  # noqa: E731
    return (f"configuration {old.get('configuration')} ran {what(ran)}, not {what(now)}; resume with "
            f"the same configuration or use another --name")


def with_scratch(tasks: list) -> tuple[list, Optional[str]]:
    """The tasks with a temporary folder for the sweep's uncompressed copies handed to their
    commands (made only when a command reads ``{file}`` of a gzipped instance), and the folder."""
    wanted = [t for t in tasks if t.command is not None and t.command.uses("file")
              and t.path.endswith(".gz")]
    if not wanted:
        return tasks, None
    import tempfile

    folder = tempfile.mkdtemp(prefix="bench-cmd-")
    return [replace(t, command=t.command.with_scratch(folder)) if t.command is not None else t
            for t in tasks], folder


def remove_scratch(folder: Optional[str]) -> None:
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
