"""Problem and solution files: reading with validation that names what is wrong, and writing.

``read`` loads and validates (contest and extended formats, solution files), ``write`` writes them
(the contest format streamed, the extended format, solutions), ``common`` holds what both share;
``choose_parser`` picks ``json`` or the fast scanner for a file by its size.
Everything public is importable from here: ``from portfolio.io import load_problem``.
"""

from .choose_parser import load_contest, load_contest_named
from .common import EXTENDED_FORMAT, PathLike, ProblemFormatError, SolutionFormatError
from .read import (
    TOO_DEEP,
    load_problem,
    parse_document,
    parse_extended,
    parse_problem,
    parse_solution_text,
    problem_from_arrays,
    read_bytes,
    read_extended,
    read_solution,
)
from .write import (
    format_contest,
    problem_to_dict,
    problem_to_extended,
    write_extended,
    write_problem,
    write_solution,
)

__all__ = [
    "EXTENDED_FORMAT", "PathLike", "ProblemFormatError", "SolutionFormatError", "TOO_DEEP",
    "format_contest", "load_contest", "load_contest_named", "load_problem", "parse_document", "parse_extended",
    "parse_problem", "parse_solution_text",
    "problem_from_arrays", "problem_to_dict", "problem_to_extended", "read_bytes", "read_extended", "read_solution",
    "write_extended", "write_problem", "write_solution",
]
