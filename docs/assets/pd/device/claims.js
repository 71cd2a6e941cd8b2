// Which sentence describes the reader's result: each candidate in the demo JSON's `claims` carries a
// declarative condition, `{"if": [left, op, right]}` or a list of such triples that must all hold, whose
// sides are names of the result's figures (or literal numbers and booleans). A tiny interpreter, never eval or Function (the CSP forbids them anyway).

const OPERATORS = {
  "<": (a, b) => a < b,
  "<=": (a, b) => a <= b,
  ">": (a, b) => a > b,
  ">=": (a, b) => a >= b,
  "==": (a, b) => a === b,
  "!=": (a, b) => a !== b,
};

function operand(side, values) {
  if (typeof side === "string") {
    if (!(side in values)) throw new Error(`claim condition names unknown figure "${side}"; known: ${Object.keys(values).join(", ")}`);
    return values[side];
  }
  return side;
}

/** True when the condition (or every condition of a list) holds for `values`; a malformed one throws. */
export function holds(condition, values) {
  if (Array.isArray(condition) && condition.length && condition.every(Array.isArray)) {
    return condition.every((part) => holds(part, values));
  }
  if (!Array.isArray(condition) || condition.length !== 3 || !(condition[1] in OPERATORS)) {
    throw new Error(`claim condition must be [left, op, right] with op one of ${Object.keys(OPERATORS).join(" ")}`);
  }
  const [left, op, right] = condition;
  return OPERATORS[op](operand(left, values), operand(right, values));
}

/** The keys of the claims whose conditions hold, in the JSON's order. */
export function chosenClaims(claims, values) {
  return (claims || []).filter((claim) => holds(claim.if, values)).map((claim) => claim.key);
}
