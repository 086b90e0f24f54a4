"""The catalogue: tools as data (``catalogue/tools/<category>/*.yaml``), workflows as data
(``catalogue/workflows/*.yaml``) and their loaders."""

from catalogue.loader import CatalogueError, load_catalogue
from catalogue.tool import (
    CATEGORIES,
    CREDIT_CLASSES,
    TOOL_PLANS,
    Catalogue,
    Tool,
    category_label,
)
from catalogue.workflow import Step, Workflow, WorkflowCatalogue
from catalogue.workflow_loader import load_workflows

__all__ = [
    "CATEGORIES",
    "CREDIT_CLASSES",
    "TOOL_PLANS",
    "Catalogue",
    "CatalogueError",
    "Step",
    "Tool",
    "Workflow",
    "WorkflowCatalogue",
    "category_label",
    "load_catalogue",
    "load_workflows",
]
