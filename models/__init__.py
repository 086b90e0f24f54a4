"""The SQLAlchemy models, split by domain; this module only re-exports them."""

from models.account import ROLES, Account, Invitation, Membership, User, UserSession
from models.agency import Embed, WhiteLabel
from models.api_key import ApiKey
from models.assistant import AssistantAnswer
from models.blob import StoredFile
from models.plan import PLAN_ORDER, Plan
from models.run import RUN_STATES, TERMINAL_STATES, Run
from models.usage import UsageDaily, UsageEvent
from models.webhook import DELIVERY_STATES, WebhookDelivery
from models.workflow import WorkflowRun

__all__ = [
    "DELIVERY_STATES",
    "PLAN_ORDER",
    "ROLES",
    "RUN_STATES",
    "TERMINAL_STATES",
    "Account",
    "ApiKey",
    "AssistantAnswer",
    "Embed",
    "Invitation",
    "Membership",
    "Plan",
    "Run",
    "StoredFile",
    "UsageDaily",
    "UsageEvent",
    "UserSession",
    "User",
    "WebhookDelivery",
    "WhiteLabel",
    "WorkflowRun",
]
