"""The benchmark's trivial handler as FastAPI apps (the same logic as
model/customize_service.py: answer {"ok": true, "echo": <the JSON body>}).

app       async endpoint: runs on the event loop (FastAPI's fastest form)
app_sync  plain def endpoint: runs in FastAPI's thread pool, as Atelier runs
          handlers (off the event loop, so a slow model does not block it)
"""

from typing import Any

from fastapi import Body, FastAPI, Request

app = FastAPI()
app_sync = FastAPI()


@app.post("/")
async def predict(request: Request):
    data = await request.json()
    return {"ok": True, "echo": data}


@app_sync.post("/")
def predict_sync(data: Any = Body(...)):
    return {"ok": True, "echo": data}
