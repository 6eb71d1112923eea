import pytest

# The shared channel behaviour suite keeps its asserts in a plain module: have pytest
# explain their failures here too (the integration conftest registers it as well).
pytest.register_assert_rewrite("tests.integration.channels.behaviour")
