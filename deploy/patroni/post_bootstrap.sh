#!/bin/sh
# Patroni runs this once, on the member that initialises the cluster, with a superuser
# connection string as $1. It makes what the service needs: the database, an owner role that
# runs the migrations (`pms-cli db migrate`, the Procfile's release) and a service role that is
# neither owner, superuser nor BYPASSRLS (row-level security applies to it). The migrations
# grant the service role its privileges.
#   PMS_DB_NAME (pms), PMS_DB_OWNER (pms_owner), PMS_DB_APP (pms_app),
#   PMS_DB_OWNER_PASSWORD, PMS_DB_APP_PASSWORD (required)
set -eu
url="$1"
name="${PMS_DB_NAME:-pms}"
owner="${PMS_DB_OWNER:-pms_owner}"
app="${PMS_DB_APP:-pms_app}"
psql -v ON_ERROR_STOP=1 -q "$url" <<SQL
CREATE ROLE "$owner" LOGIN PASSWORD '${PMS_DB_OWNER_PASSWORD}';
CREATE ROLE "$app" LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE PASSWORD '${PMS_DB_APP_PASSWORD}';
CREATE DATABASE "$name" OWNER "$owner";
\\connect "$name"
ALTER SCHEMA public OWNER TO "$owner";
REVOKE ALL ON SCHEMA public FROM PUBLIC;
SQL
