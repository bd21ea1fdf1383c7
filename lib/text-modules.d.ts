// Files imported `with { type: "text" }` are embedded in the binary as strings.
declare module "*.md" {
  const text: string
  export default text
}
declare module "*.yaml" {
  const text: string
  export default text
}
declare module "*.css" {
  const text: string
  export default text
}
