import pytest

pytestmark = pytest.mark.browser


def test_chromium_loads_the_landing_page(live_server, page):
    page.goto(live_server + "/")
    assert page.title() == "RLDS Studio"
