"""A dataclass the fixtures pickle: a stable module path, so that pickle
writes GLOBAL 'fixture_types RunInfo' and every script that imports this
module (make_fixtures.py, check_written.py) can load the files."""
import dataclasses


@dataclasses.dataclass
class RunInfo:
    name: str
    lr: float
    tags: tuple = ()
