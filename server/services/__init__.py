"""Business logic between the routes and the tables."""
