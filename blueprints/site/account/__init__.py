"""The account side of the site: every module of this package adds its routes to the site's
blueprint (``blueprints.site.routes.bp``), so the site's CSRF check, headers and error pages
apply to them; importing the package imports them all."""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
