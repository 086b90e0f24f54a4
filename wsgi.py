app = __import__("app").create_app()
