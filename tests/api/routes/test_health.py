from server import __version__
from server.core.replica import replica_id


def test_health_reports_version_and_database(client):
    res = client.get("/api/health")
    assert res.status_code == 200
    body = res.json()
    assert body == {
        "status": "ok",
        "version": __version__,
        "database": "ok",
        "replica": body["replica"],
    }
    assert body["replica"] == replica_id()


def test_openapi_describes_the_api(client):
    res = client.get("/openapi.json")
    assert res.status_code == 200
    paths = res.json()["paths"]
    assert "/api/studies/{study_id}/state" in paths
    assert client.get("/docs").status_code == 200
