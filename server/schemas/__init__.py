"""Request and response bodies: a Create / Update / Public family per entity, one module per
area (users, studies, episodes, bulk, exports, crowd; what they share in ``base``)."""
