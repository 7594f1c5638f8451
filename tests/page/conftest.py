import pytest
import streamlit as st


@pytest.fixture(autouse=True)
def _clear_streamlit_caches():
    """Streamlit caches are process-global: start every AppTest from a clean slate."""
    st.cache_data.clear()
    st.cache_resource.clear()
    yield
