"""The export formats: one module each, which registers its format (server/export/registry.py).

The registry imports this package on its first look-up; a new format is a new module here
and its line below.
"""

from server.export.formats import envlogger as envlogger
from server.export.formats import lerobot as lerobot
from server.export.formats import minari as minari
from server.export.formats import rlds as rlds
