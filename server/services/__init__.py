"""Business logic between the routes and the tables: one package per domain; users, the login
limit and the first start alone."""
