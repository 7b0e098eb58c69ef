"""Tiny test architectures registered with timm, so `timm.create_model(name)` builds them as
it builds a real architecture (the code under test takes timm names)."""

from timm.models import register_model


def register(name: str, cls, **fixed) -> None:
    """Register `cls(**fixed, **kwargs)` under the timm name `name`."""

    def build(pretrained=False, **kwargs):
        return cls(**fixed, **kwargs)

    build.__name__ = build.__qualname__ = name
    build.__module__ = cls.__module__
    register_model(build)
