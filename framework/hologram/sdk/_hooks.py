"""Typed stage hooks: which view a hook asks for, and the dict-in, dict-out wrapper the runtime calls."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hologram.sdk._views import StageView

_VIEWS_MODULE = "hologram.sdk._views"


def view_class(function: Callable[..., Any], stage: str) -> type[StageView] | None:
    """The typed view a hook asks for by annotating its parameter, or None for a bare-dict hook.

    Annotations are resolved when the hook is registered (``from __future__ import annotations`` makes them
    strings); one that cannot be resolved there (imported under TYPE_CHECKING) is matched by class name.
    The views module is imported only here, for a hook that names a view: creating its classes costs ~7 ms,
    which a plugin with dict hooks (or none) should not pay at start."""
    try:
        parameters = list(inspect.signature(function, eval_str=True).parameters.values())
    except (NameError, TypeError, SyntaxError):
        parameters = list(inspect.signature(function).parameters.values())
    if not parameters:
        raise TypeError(f"stage hook {function.__qualname__} for {stage} takes no parameter; it receives the view")
    annotation = parameters[0].annotation
    if isinstance(annotation, str):
        name = annotation.rpartition(".")[2]
        if not name.endswith("View"):
            return None
    elif getattr(annotation, "__module__", None) == _VIEWS_MODULE and isinstance(annotation, type):
        name = annotation.__name__
    else:
        return None
    from hologram.sdk import _views

    chosen = getattr(_views, name, None)
    if not (isinstance(chosen, type) and issubclass(chosen, _views.StageView)):
        return None
    expected = _views.VIEWS[stage]
    if chosen is not _views.StageView and chosen is not expected:
        raise TypeError(
            f"stage hook {function.__qualname__} is registered for {stage} but takes a {chosen.__name__}; "
            f"annotate it with {expected.__name__}"
        )
    return expected


def typed_hook(function: Callable[..., Any], view: type[StageView]) -> Callable[[dict[str, Any]], Any]:
    """A dict-in, dict-out hook around a typed one, so the runtime and the kernel's in-process path keep one
    calling convention. The answer needs no conversion: the views' methods build the wire dict already."""
    if inspect.iscoroutinefunction(function):

        async def typed_async(context: dict[str, Any]) -> Any:
            return await function(view.from_wire(context))

        return functools.wraps(function)(typed_async)

    def typed(context: dict[str, Any]) -> Any:
        return function(view.from_wire(context))

    return functools.wraps(function)(typed)
