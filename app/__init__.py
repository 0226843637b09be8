"""The web shell of Build Kafka: HTTP in, HTML out. No simulation logic lives here."""
