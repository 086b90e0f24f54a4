"""Tool runs with their files in a bucket (moto's server on loopback), through the API: an
image in and out, its URL served from the bucket, deletion, and a bucket that is down or has
lost an object answering 503 and 410 problems, never a 500."""

import io

import pytest
from PIL import Image

from extensions import db
from services import accounts, keys, storage
from tests.engines.fixtures import solid_image
from tests.fakes.s3_server import free_port
from tests.helpers import auth


@pytest.fixture
def client(s3_app):
    return s3_app.test_client()


@pytest.fixture
def pro_key(s3_app) -> str:
    account = accounts.create_account("s3-runs@example.com", "pro")
    raw = keys.create_key(account, "s3 runs")[1]
    db.session.commit()
    return raw


def bucket_down(app) -> None:
    """Point the app at a port where nothing listens, one attempt per call."""
    app.extensions["storage"] = storage.backend_for(
        {**app.config, "S3_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}", "S3_MAX_ATTEMPTS": 1}
    )


def grayscale(client, key: str):
    picture = solid_image(8, 6, "crimson").data
    return client.post(
        "/v1/tools/run",
        headers=auth(key),
        data={"slug": "image-grayscale-converter", "image": (io.BytesIO(picture), "red.png")},
    )


def path_of(url: str) -> str:
    return url.split("svc.test", 1)[1]


def assert_storage_unavailable(response) -> None:
    assert response.status_code == 503
    assert response.mimetype == "application/problem+json"
    body = response.get_json()
    assert body["code"] == "provider_unavailable"
    assert body["detail"] == "File storage is unavailable right now; try again shortly."
    assert response.headers["Retry-After"] == "30"


def test_an_image_run_stores_its_output_in_the_bucket_and_serves_it(client, pro_key, s3):
    response = grayscale(client, pro_key)
    assert response.status_code == 200, response.get_json()
    image = response.get_json()["output"]["image"]
    assert image["content_type"] == "image/png"
    served = client.get(path_of(image["url"]))
    assert served.status_code == 200
    assert served.headers["Content-Type"] == "image/png"
    assert served.headers["Content-Length"] == str(image["size"])
    with Image.open(io.BytesIO(served.data)) as picture:
        assert (picture.mode, picture.size) == ("L", (8, 6))
    assert s3.get(image["id"])["Body"] == served.data
    ranged = client.get(path_of(image["url"]), headers={"Range": "bytes=1-3"})
    assert (ranged.status_code, ranged.data) == (206, b"PNG")


def test_the_owner_deletes_the_output_and_the_object_goes(client, pro_key, s3):
    image = grayscale(client, pro_key).get_json()["output"]["image"]
    stranger = accounts.create_account("s3-stranger@example.com", "pro")
    stranger_key = keys.create_key(stranger, "stranger")[1]
    db.session.commit()
    refused = client.delete(f"/v1/files/{image['id']}", headers=auth(stranger_key))
    assert (refused.status_code, refused.get_json()["code"]) == (404, "file_not_found")
    assert s3.get(image["id"]) is not None
    assert client.delete(f"/v1/files/{image['id']}", headers=auth(pro_key)).status_code == 204
    assert s3.get(image["id"]) is None
    assert client.get(path_of(image["url"])).status_code == 404


def test_a_lost_object_is_a_410_problem(client, pro_key, s3):
    image = grayscale(client, pro_key).get_json()["output"]["image"]
    s3.remove(image["id"])
    response = client.get(path_of(image["url"]))
    assert response.status_code == 410
    assert response.mimetype == "application/problem+json"
    assert response.get_json()["code"] == "file_gone"


def test_a_bucket_down_while_serving_is_a_503_problem(s3_app, client, pro_key):
    image = grayscale(client, pro_key).get_json()["output"]["image"]
    bucket_down(s3_app)
    assert_storage_unavailable(client.get(path_of(image["url"])))
    # What the row answers needs no bucket.
    assert client.head(path_of(image["url"])).status_code == 200
    etag = f'"{storage.find(image["id"]).sha256}"'
    not_modified = client.get(path_of(image["url"]), headers={"If-None-Match": etag})
    assert not_modified.status_code == 304
    changed = client.get(path_of(image["url"]), headers={"If-None-Match": '"older"'})
    assert changed.status_code == 503
    assert_storage_unavailable(client.delete(f"/v1/files/{image['id']}", headers=auth(pro_key)))
    assert storage.find(image["id"]) is not None


def test_a_bucket_down_when_a_run_stores_its_input_is_a_503_problem(s3_app, client, pro_key):
    bucket_down(s3_app)
    assert_storage_unavailable(grayscale(client, pro_key))


def test_a_bucket_down_when_a_run_stores_its_output_fails_the_run_with_a_503(
    s3_app, client, pro_key
):
    bucket_down(s3_app)
    response = client.post(
        "/v1/tools/run", headers=auth(pro_key), json={"slug": "qr-code-generator", "input": "hi"}
    )
    assert_storage_unavailable(response)
    assert response.get_json()["run_id"]
