// ESLint rule: the gateway's shared words (a residency tier, a privacy mode, a key environment) are written
// once, in @gw/vocabulary; anywhere else code names them through its constants (`KeyEnvironment.live`) or lists
// (`privacyModes`). A literal of one of those words outside the package and the tests is reported.
//
// A literal listed with another word of its list (`'live' | 'test'`, `['uk', 'eu', 'unspecified']`) is always
// reported. A single word among strings of another list (`'on' | 'off'`, address words holding "uk") belongs to
// that list, and an HTML attribute's own keyword (`autocomplete="off"`) is not the gateway's. Some words are
// ordinary English too ("off", "test"): alone, such a literal is reported only where it stands for the
// vocabulary, i.e. beside another of its words in an object (`{ live: 'live', test: 'test' }`) or compared with,
// assigned to or keyed by a name that says environment, privacy, residency, jurisdiction or tier.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { keyEnvironments, privacyModes, residencyTiers } = require('../../packages/vocabulary/dist/index.js');

const lists = [residencyTiers, privacyModes, keyEnvironments];
const vocabulary = new Set(lists.flat());
const listOf = (word) => lists.find((list) => list.includes(word));
/** Words that also mean something outside the vocabulary: reported only in a vocabulary context. */
const commonWords = new Set(['off', 'test']);
const vocabularyName = /environment|privacy|residency|jurisdiction|tier/i;
/** JSX attributes whose string is the gateway's data rather than HTML's own keyword. */
const dataAttributes = new Set(['value', 'defaultValue']);

const stringOf = (node) => {
  if (node?.type === 'Literal' && typeof node.value === 'string') return node.value;
  if (node?.type === 'TemplateLiteral' && node.expressions.length === 0) return node.quasis[0].value.cooked;
  if (node?.type === 'TSLiteralType') return stringOf(node.literal);
  return undefined;
};

const nameOf = (node) => {
  if (!node) return undefined;
  if (node.type === 'Identifier') return node.name;
  if (node.type === 'MemberExpression') return nameOf(node.property);
  if (node.type === 'Literal') return String(node.value);
  if (node.type === 'ChainExpression') return nameOf(node.expression);
  if (node.type === 'TSNonNullExpression') return nameOf(node.expression);
  return undefined;
};

/** The strings a literal is listed or compared with: a union, an array, a conditional, an `===` chain. */
function siblingsOf(literal) {
  const node = literal.parent?.type === 'TSLiteralType' ? literal.parent : literal;
  const parent = node.parent;
  if (!parent) return [];
  let members = [];
  if (parent.type === 'TSUnionType') members = parent.types;
  else if (parent.type === 'ArrayExpression') members = parent.elements;
  else if (parent.type === 'ConditionalExpression' && parent.test !== node)
    members = [parent.consequent, parent.alternate];
  else if (parent.type === 'SwitchCase') members = parent.parent.cases.map((switchCase) => switchCase.test);
  else if (parent.type === 'BinaryExpression') members = comparedInChain(parent);
  return members
    .filter((member) => member !== node)
    .map(stringOf)
    .filter((value) => value !== undefined);
}

/** The literals of `a === 'x' || a === 'y' && …`, from one comparison upwards. */
function comparedInChain(comparison) {
  let top = comparison;
  while (top.parent?.type === 'LogicalExpression') top = top.parent;
  const found = [];
  const visit = (node) => {
    if (node.type === 'LogicalExpression') {
      visit(node.left);
      visit(node.right);
    } else if (node.type === 'BinaryExpression') found.push(node.left, node.right);
  };
  visit(top);
  return found;
}

/** The name a literal is compared with, assigned to or keyed by. */
function contextName(literal) {
  let node = literal.parent?.type === 'TSLiteralType' ? literal.parent : literal;
  while (node.parent?.type === 'TSUnionType') node = node.parent;
  const parent = node.parent;
  if (!parent) return undefined;
  switch (parent.type) {
    case 'BinaryExpression':
      return nameOf(parent.left === node ? parent.right : parent.left);
    case 'Property':
      return parent.value === node ? nameOf(parent.key) : undefined;
    case 'VariableDeclarator':
      return nameOf(parent.id);
    case 'AssignmentExpression':
    case 'AssignmentPattern':
      return nameOf(parent.left);
    case 'SwitchCase':
      return nameOf(parent.parent.discriminant);
    case 'TSTypeAnnotation':
      return nameOf(parent.parent?.key ?? parent.parent);
    case 'TSTypeAliasDeclaration':
      return nameOf(parent.id);
    case 'JSXExpressionContainer':
      return nameOf(parent.parent?.name);
    default:
      return undefined;
  }
}

/** The other strings of the object a literal is a property value of. */
function propertySiblingsOf(literal) {
  const property = literal.parent;
  if (property?.type !== 'Property' || property.value !== literal || property.parent?.type !== 'ObjectExpression') {
    return [];
  }
  return property.parent.properties
    .filter((other) => other !== property && other.type === 'Property')
    .map((other) => stringOf(other.value))
    .filter((value) => value !== undefined);
}

function isVocabularyLiteral(node, word) {
  if (node.parent?.type === 'JSXAttribute' && !dataAttributes.has(node.parent.name.name)) return false;
  const siblings = siblingsOf(node);
  if (siblings.some((sibling) => sibling !== word && listOf(word).includes(sibling))) return true;
  if (siblings.some((sibling) => !vocabulary.has(sibling))) return false;
  if (siblings.length > 0 || !commonWords.has(word)) return true;
  if (propertySiblingsOf(node).some((sibling) => vocabulary.has(sibling))) return true;
  return vocabularyName.test(contextName(node) ?? '');
}

/** @type {import('eslint').Rule.RuleModule} */
const rule = {
  meta: {
    type: 'problem',
    docs: { description: 'residency tiers, privacy modes and key environments come from @gw/vocabulary' },
    messages: {
      literal:
        '"{{word}}" is a word of the shared vocabulary: use its constant or list from @gw/vocabulary (docs/conventions.md).',
    },
    schema: [],
  },
  create(context) {
    const check = (node, word) => {
      if (word !== undefined && vocabulary.has(word) && isVocabularyLiteral(node, word)) {
        context.report({ node, messageId: 'literal', data: { word } });
      }
    };
    return {
      Literal: (node) => check(node, stringOf(node)),
      TemplateLiteral: (node) => check(node, stringOf(node)),
      JSXText: (node) => check(node, node.value.trim()),
    };
  },
};

export default { rules: { 'vocabulary-literals': rule } };
