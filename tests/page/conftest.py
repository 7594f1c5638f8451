import pytest
import streamlit as st


@pytest.fixture(autouse=True)
def _clear_streamlit_caches():
    """Streamlit caches are process-global: start every AppTest from a clean slate."""
    st.cache_data.clear()
    st.cache_resource.clear()
    yield


@pytest.fixture(autouse=True, scope="session")
def _show_error_details():
    """The shipped config hides tracebacks from users; tests want to read them."""
    from streamlit import config

    config.set_option("client.showErrorDetails", "full")
    # AppTest is one local user, as `make run` is: a loopback server, where saved scenarios are editable
    # without sign-in (core/store/auth.py; beyond loopback they would be read-only)
    config.set_option("server.address", "127.0.0.1")
    yield
