"""What the tests share: servers to start, the test double, real-library stacks, proxies."""
