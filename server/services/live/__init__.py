"""Live monitoring: the dashboard's figures and feed, replicas and their sessions."""
