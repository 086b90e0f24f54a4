"""The catalogue: tools as data (``catalogue/tools/<category>/*.yaml``) and their loader."""

from catalogue.loader import CatalogueError, load_catalogue
from catalogue.tool import CATEGORIES, CREDIT_CLASSES, TOOL_PLANS, Catalogue, Tool

__all__ = [
    "CATEGORIES",
    "CREDIT_CLASSES",
    "TOOL_PLANS",
    "Catalogue",
    "CatalogueError",
    "Tool",
    "load_catalogue",
]
