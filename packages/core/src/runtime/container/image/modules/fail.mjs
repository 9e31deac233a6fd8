export default async function fail() {
  throw new Error("boom");
}
