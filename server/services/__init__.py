"""Business logic between the routes and the tables: one package per domain, users, first start."""
