// Fake push gateways for tests and local trials.
