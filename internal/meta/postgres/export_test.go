package postgres

// Migrations are the embedded goose migrations (tests of a migration).
var Migrations = migrations
