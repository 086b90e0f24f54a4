"""The agency's white-label brand: ``GET/PUT /v1/white-label``."""
