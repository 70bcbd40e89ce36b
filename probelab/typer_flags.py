"""Bool flags coerced without pydantic, so that a command with nothing else imports none.

typer (0.29 here) coerces each parameter's value through a pydantic TypeAdapter that it
builds on first use, and it builds one even where no value needs coercing: for --help, which
every command has and whose value is None unless it is given. Building it imports pydantic,
about 0.06 s of a 0.2 s `probelab list` on a 2-core machine. A bool flag's value is a bool
(which typer passes through uncoerced) or None (nothing to coerce: probelab reads no flag
from the environment), so its parameters get typer's own pass-through coercion instead. A
command whose other parameters need pydantic (a path, a number) still builds their adapters.
Where typer's internals are not these, nothing is changed.
"""

from typing import Any


def coerce_bool_flags_without_pydantic() -> None:
    try:
        from typer._coercion import PassThroughRuntimeParam
        from typer.core import _TyperParameter
    except ImportError:
        return
    build = getattr(_TyperParameter, "get_runtime_param", None)
    if build is None or getattr(build, "bool_flags_pass_through", False):
        return

    def get_runtime_param(self: Any) -> Any:
        described = getattr(self, "type_descriptor", None)
        if getattr(self, "_runtime_param", None) is None and described is not None \
                and described.annotation is bool:
            self._runtime_param = PassThroughRuntimeParam(
                annotation=bool, parameter_info=described.parameter_info)
        return build(self)

    get_runtime_param.bool_flags_pass_through = True  # type: ignore[attr-defined]
    _TyperParameter.get_runtime_param = get_runtime_param
