// web/minimap.js is imported as text (lib/view/assets.ts): to TypeScript the module is its source, a string.
declare const text: string
export default text
