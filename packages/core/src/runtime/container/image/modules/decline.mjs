export default async function decline() {
  return { status: "wrong_handler" };
}
