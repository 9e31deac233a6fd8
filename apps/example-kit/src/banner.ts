/**
 * Prints where an example app listens and three `curl` commands to try it: get a token, chat,
 * stream a story.
 *
 * @example
 * printBanner("Nerva Express example", "http://127.0.0.1:3000");
 */
export function printBanner(title: string, url: string): void {
  console.log(`${title} listening on ${url}`);
  console.log(
    `  TOKEN=$(curl -s -X POST ${url}/token -H 'content-type: application/json' -d '{"user":"alice"}' | node -pe 'JSON.parse(require("fs").readFileSync(0)).token')`,
  );
  console.log(
    `  curl -s -X POST ${url}/chat -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d '{"message":"Find me a flight to Lisbon"}'`,
  );
  console.log(
    `  curl -N -X POST ${url}/chat/stream -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d '{"message":"Tell me a story"}'`,
  );
}
