export default async function delegator(input, ctx, runtime) {
  const inner = await runtime.delegate("echo", { message: `inner:${input.message}` });
  if (inner.status !== "success")
    return { status: "error", error: `delegation failed: ${inner.error}` };
  return `outer(${inner.output})`;
}
