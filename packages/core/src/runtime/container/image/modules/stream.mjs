export default async function* stream(input) {
  for (const word of input.message.split(/\s+/).filter(Boolean)) yield `${word} `;
}
