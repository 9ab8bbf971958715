#!/bin/sh
# Run once by the postgres image on an empty data volume (/docker-entrypoint-initdb.d):
# the application's own role, which reads and writes rows but is not a superuser and owns
# nothing. Migrations run as the owner (POSTGRES_USER, STUDIO_MIGRATION_DATABASE_URL); the
# default privileges below give the app role the tables and sequences they create.
set -eu
: "${STUDIO_DB_APP_USER:=studio_app}"
: "${STUDIO_DB_APP_PASSWORD:?set STUDIO_DB_APP_PASSWORD}"
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
    -v app_user="$STUDIO_DB_APP_USER" -v app_password="$STUDIO_DB_APP_PASSWORD" <<'SQL'
CREATE ROLE :"app_user" LOGIN PASSWORD :'app_password'
    NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
GRANT CONNECT ON DATABASE :"DBNAME" TO :"app_user";
GRANT USAGE ON SCHEMA public TO :"app_user";
ALTER DEFAULT PRIVILEGES IN SCHEMA public
    GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO :"app_user";
ALTER DEFAULT PRIVILEGES IN SCHEMA public
    GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO :"app_user";
SQL
