export default function Todo() { return <p>todo</p>; }
