export { nodeRunKey, nodeStepKey, parseNodeKey } from "../../runs/node-keys.js";
