"""RLDS Studio: collect human demonstrations in RL environments, ship them as RLDS."""

__version__ = "0.1.0"
