// The part of better-sqlite3 (an optional peer dependency) that store.ts uses to read a runs
// file without writing to it; @nerva/core keeps the full types for its SqliteRunStore.
declare module "better-sqlite3" {
  interface Statement {
    get(...params: unknown[]): unknown;
    all(...params: unknown[]): unknown[];
  }
  interface Database {
    prepare(sql: string): Statement;
    close(): void;
  }
  const Database: new (
    path: string,
    options: { readonly: boolean; fileMustExist: boolean },
  ) => Database;
  export default Database;
}
