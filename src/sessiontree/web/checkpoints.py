from starlette.routing import Route

routes: list[Route] = []
