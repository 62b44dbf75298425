"""The README's driver in Python ("Certifying a client"), certified by the zoo as it stands."""

import os
import sys

import requests
from requests.adapters import HTTPAdapter
from urllib3.util import Retry

retry = Retry(total=5, backoff_factor=0.5, status_forcelist=[429, 503], allowed_methods=None)
api = requests.Session()
api.mount("http://", HTTPAdapter(max_retries=retry))  # honours Retry-After by default
api.headers["Authorization"] = f"Bearer {os.environ['PETSTORE_API_KEY']}"
url = os.environ["PETSTORE_BASE_URL"] + "/categories"
for _ in range(int(os.environ.get("PETSTORE_REPEAT", "1"))):
    if os.environ["PETSTORE_OPERATION"] == "createCategory":
        answer = api.post(url, json={"name": os.environ["PETSTORE_CATEGORY_NAME"]})
    else:
        answer = api.get(url)
    print(answer.status_code, answer.text)
    if not answer.ok:
        sys.exit(1)
