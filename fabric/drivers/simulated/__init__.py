"""The simulated fabric manager: a first-class driver whose hardware lives in the database."""
